//! The launch layer's host-side rules: which targets a device runs, and the driver probe,
//! which must agree with the launch entry points on any machine (with or without a GPU).

use tilec_runtime::{device_count, driver_library, runs_on, Image, RuntimeError};

#[test]
fn arch_specific_targets_run_on_their_capability_only() {
    let ptx = Image::Ptx("");
    let cubin = Image::Cubin(&[]);
    for image in [&ptx, &cubin] {
        assert!(runs_on("sm_90a", (9, 0), image));
        assert!(!runs_on("sm_90a", (10, 0), image));
        assert!(!runs_on("sm_90a", (8, 9), image));
        assert!(runs_on("sm_100a", (10, 0), image));
        assert!(!runs_on("sm_100a", (9, 0), image));
    }
}

#[test]
fn plain_ptx_runs_forward_and_a_plain_cubin_within_its_major() {
    assert!(runs_on("sm_90", (9, 0), &Image::Ptx("")));
    assert!(runs_on("sm_90", (10, 0), &Image::Ptx("")));
    assert!(!runs_on("sm_100", (9, 0), &Image::Ptx("")));
    assert!(runs_on("sm_90", (9, 0), &Image::Cubin(&[])));
    assert!(!runs_on("sm_90", (10, 0), &Image::Cubin(&[])));
    assert!(runs_on("sm_100", (10, 3), &Image::Cubin(&[])));
}

#[test]
fn unknown_targets_run_nowhere() {
    for t in ["", "sm_", "sm_9x", "compute_90", "sm_90b", "gfx942"] {
        assert!(!runs_on(t, (9, 0), &Image::Ptx("")), "{t}");
    }
}

#[test]
fn without_a_driver_the_launch_layer_answers_with_an_error() {
    match (driver_library(), device_count()) {
        (Err(probe), Err(RuntimeError::NoDriver(e))) => {
            assert_eq!(probe, e);
            assert!(e.to_string().contains("no CUDA driver"), "{e}");
        }
        // With a driver, cuInit may still fail (no device visible): never a panic.
        (Ok(_), Ok(_) | Err(RuntimeError::Driver { .. })) => {}
        (probe, count) => panic!("the probe says {probe:?} but device_count says {count:?}"),
    }
}
