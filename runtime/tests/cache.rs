//! The disk cache: a miss compiles and stores, a hit reads without compiling, a corrupted
//! or torn entry is recompiled and replaced, and writers on several threads leave one
//! valid entry. Also the driver probe's error on a machine without a GPU.

use std::sync::atomic::{AtomicUsize, Ordering};
use tilec_runtime::{driver_library, Cache, CacheKey, Entry, Lookup};

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tilec-cache-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn entry(ptx: &str) -> Entry {
    Entry {
        ptx: ptx.to_string(),
        manifest: "{\"kernel\": \"k\"}".to_string(),
        cubin: vec![0x00, 0x7f, 0xe0, 0xff],
    }
}

#[test]
fn keys_are_length_prefixed_digests() {
    let k = CacheKey::new([b"ab".as_slice(), b"c".as_slice()]);
    assert_eq!(k.as_str().len(), 64);
    assert_ne!(k, CacheKey::new([b"a".as_slice(), b"bc".as_slice()]));
    assert_eq!(k, CacheKey::new([b"ab".as_slice(), b"c".as_slice()]));
}

#[test]
fn miss_then_hit_then_corrupt() {
    let c = Cache::at(dir("basic"));
    let key = CacheKey::new([b"source".as_slice(), b"sm_90a".as_slice()]);
    let compiles = AtomicUsize::new(0);
    let compile = || {
        compiles.fetch_add(1, Ordering::SeqCst);
        Ok::<_, String>(entry(".version 8.0"))
    };
    assert_eq!(c.get_or_compile(&key, compile).unwrap().1, Lookup::Miss);
    let (e, l) = c.get_or_compile(&key, compile).unwrap();
    assert_eq!((l, e.ptx.as_str()), (Lookup::Hit, ".version 8.0"));
    assert_eq!(compiles.load(Ordering::SeqCst), 1);
    // Flip one byte of the body: the checksum no longer matches.
    let path = c.dir().join(format!("{}.tilec", key.as_str()));
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(c.get(&key), None);
    assert_eq!(c.get_or_compile(&key, compile).unwrap().1, Lookup::Corrupt);
    assert_eq!(compiles.load(Ordering::SeqCst), 2);
    // A torn write (half a file) is no entry either.
    let good = std::fs::read(&path).unwrap();
    std::fs::write(&path, &good[..good.len() / 2]).unwrap();
    assert_eq!(c.get_or_compile(&key, compile).unwrap().1, Lookup::Corrupt);
    assert_eq!(c.get(&key).unwrap().ptx, ".version 8.0");
    // A compile error is returned and nothing is stored.
    let other = CacheKey::new([b"bad".as_slice()]);
    assert_eq!(
        c.get_or_compile(&other, || Err::<Entry, _>("no"))
            .unwrap_err(),
        "no"
    );
    assert_eq!(c.get(&other), None);
    std::fs::remove_dir_all(c.dir()).unwrap();
}

#[test]
fn concurrent_writers_leave_one_valid_entry() {
    let c = Cache::at(dir("threads"));
    let key = CacheKey::new([b"same".as_slice()]);
    std::thread::scope(|s| {
        for i in 0..8 {
            let (c, key) = (&c, &key);
            s.spawn(move || c.put(key, &entry(&format!("ptx {i} {}", "x".repeat(100_000)))));
        }
    });
    let e = c.get(&key).expect("a valid entry");
    assert!(e.ptx.starts_with("ptx "), "{}", &e.ptx[..20]);
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(c.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![format!("{}.tilec", key.as_str())]);
    std::fs::remove_dir_all(c.dir()).unwrap();
}

#[test]
fn the_driver_probe_errs_without_panicking() {
    match driver_library() {
        Ok(name) => assert!(name.starts_with("libcuda") || name == "nvcuda.dll"),
        Err(e) => {
            let msg = e.to_string();
            let tried = "no CUDA driver: libcuda.so.1, libcuda.so could not be loaded";
            assert!(msg.starts_with(tried), "{msg}");
            assert!(
                msg.ends_with("launching needs an NVIDIA GPU and its driver"),
                "{msg}"
            );
        }
    }
}
