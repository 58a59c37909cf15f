//! The compile cache on disk: one file per key, holding the PTX, the manifest and the cubin
//! if one was made, written
//! atomically (a temporary file in the same directory, then a rename) and checked by a
//! SHA-256 of its body when read, so that a torn or corrupted entry is recompiled instead
//! of trusted.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The first line of an entry: the format and version, then the body's SHA-256.
const MAGIC: &str = "tilec-cache-1";

/// A cache key: the SHA-256 of the parts that decide a compile's output (the source, the
/// options, the target, the tilec version, and whatever else the caller adds), each
/// length-prefixed so that no two part lists collide.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    /// The key of `parts`, in order.
    pub fn new<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> CacheKey {
        let mut h = Sha256::new();
        for p in parts {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
        }
        CacheKey(hex(&h.finalize()))
    }

    /// The key as 64 hex digits (the entry's file name).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a compile produced.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// The PTX.
    pub ptx: String,
    /// The manifest, as JSON.
    pub manifest: String,
    /// The cubin, when one was made (empty otherwise); stored as hex.
    #[serde(default, with = "hex_bytes")]
    pub cubin: Vec<u8>,
}

/// A byte string as lower-case hex in JSON (a cubin: tens of KiB).
mod hex_bytes {
    pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::hex(bytes))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text: String = serde::Deserialize::deserialize(d)?;
        let digit = |c: u8| (c as char).to_digit(16);
        if text.len() % 2 != 0 {
            return Err(serde::de::Error::custom("hex of odd length"));
        }
        text.as_bytes()
            .chunks(2)
            .map(|p| match (digit(p[0]), digit(p[1])) {
                (Some(h), Some(l)) => Ok((h * 16 + l) as u8),
                _ => Err(serde::de::Error::custom("not hex")),
            })
            .collect()
    }
}

/// The cache directory.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

/// Whether a lookup found a valid entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A valid entry was read.
    Hit,
    /// No entry: compiled and stored.
    Miss,
    /// An entry that failed its check (torn, edited, another format): compiled again and
    /// replaced.
    Corrupt,
}

impl Cache {
    /// The cache in `$TILEC_CACHE_DIR`, else `$XDG_CACHE_HOME/tilec`, else
    /// `~/.cache/tilec`; `None` when none of these can be found.
    pub fn from_env() -> Option<Cache> {
        let var = |n| {
            std::env::var_os(n)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let dir = var("TILEC_CACHE_DIR")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("tilec")))
            .or_else(|| var("HOME").map(|d| d.join(".cache").join("tilec")))?;
        Some(Cache { dir })
    }

    /// The cache in `dir` (created on the first store).
    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}.tilec", key.as_str()))
    }

    /// The entry of `key`: `Ok(None)` when there is none, `Err(())` when one is there but
    /// fails its check.
    fn read(&self, key: &CacheKey) -> Result<Option<Entry>, ()> {
        let bytes = match std::fs::read(self.path(key)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(_) => return Err(()),
        };
        let text = String::from_utf8(bytes).map_err(|_| ())?;
        let (head, body) = text.split_once('\n').ok_or(())?;
        let (magic, sum) = head.split_once(' ').ok_or(())?;
        if magic != MAGIC || sum != hex(&Sha256::digest(body.as_bytes())) {
            return Err(());
        }
        serde_json::from_str(body).map(Some).map_err(|_| ())
    }

    /// The entry of `key`, if a valid one is stored.
    pub fn get(&self, key: &CacheKey) -> Option<Entry> {
        self.read(key).ok().flatten()
    }

    /// Stores `entry` under `key`, atomically: readers see the old entry or the new one,
    /// never part of one.
    ///
    /// # Errors
    /// The directory cannot be created or written.
    pub fn put(&self, key: &CacheKey, entry: &Entry) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let body = serde_json::to_string(entry).map_err(std::io::Error::other)?;
        let sum = hex(&Sha256::digest(body.as_bytes()));
        let tmp = self.dir.join(format!(
            ".{}.{}.{:?}.tmp",
            key.as_str(),
            std::process::id(),
            std::thread::current().id()
        ));
        let mut f = std::fs::File::create(&tmp)?;
        let written = write!(f, "{MAGIC} {sum}\n{body}").and_then(|()| f.sync_all());
        drop(f);
        match written.and_then(|()| std::fs::rename(&tmp, self.path(key))) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// The entry of `key`, or what `compile` gives, stored. A store that fails (a read-only
    /// directory) does not fail the call: the entry is returned uncached. An entry that is
    /// there but cannot be read counts as corrupt and is replaced.
    ///
    /// # Errors
    /// What `compile` returns.
    pub fn get_or_compile<E>(
        &self,
        key: &CacheKey,
        compile: impl FnOnce() -> Result<Entry, E>,
    ) -> Result<(Entry, Lookup), E> {
        let lookup = match self.read(key) {
            Ok(Some(e)) => return Ok((e, Lookup::Hit)),
            Ok(None) => Lookup::Miss,
            Err(()) => Lookup::Corrupt,
        };
        let e = compile()?;
        let _ = self.put(key, &e);
        Ok((e, lookup))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
