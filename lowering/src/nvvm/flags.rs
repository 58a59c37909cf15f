//! The flag ops, `tile.wait_flag`, `tile.release_flag` and `tile.arrive_flag`, for any
//! kernel that provides a `ReduceSite` (the plain launch: every thread of the CTA; a GEMM
//! epilogue: the consumer warpgroups). One leader thread touches the flag; the site's
//! barrier orders the other threads' memory accesses with it, as CUTLASS's semaphore does:
//!
//! - wait: the leader spins on `ld.acquire.gpu.global.b32` until the flag has the value,
//!   then the barrier;
//! - release: the barrier, then the leader's `st.release.gpu.global.b32`;
//! - arrive: the barrier, the leader's `fence.acq_rel.gpu; atom.global.add.u32;
//!   fence.acq_rel.gpu` (PTX ISA, "Memory Consistency Model"), the old value through the
//!   kernel's 16-byte shared-memory slot, a second barrier, and every thread reads it.

use super::reduce::ReduceSite;
use super::writer::{ICmp, V};
use melior::ir::Value;
use tilec_dialect::{Diagnostic, OpKind, Operation, ScalarType};

/// Lowers flag op `op` on the flag at `addr` (an address-space-1 pointer to its i32), with
/// `value` (i32; unused by an arrive) and `leader` (i1: the one thread that accesses the
/// flag). Returns an arrive's result (the old value, as an `index`).
///
/// # Errors
/// An arrive whose shared-memory slot does not fit the CTA.
pub(crate) fn lower<'c: 'm, 'm, S: ReduceSite<'c, 'm>>(
    site: &mut S,
    op: &Operation,
    addr: Value<'c, 'm>,
    value: V<'c, 'm>,
    leader: V<'c, 'm>,
) -> Result<Option<V<'c, 'm>>, Diagnostic> {
    match op.kind {
        OpKind::WaitFlag => {
            let w = site.writer();
            let cont = w.block(&[]);
            let spin = w.block(&[]);
            w.cond_br(leader, &spin, &[], &cont, &[]);
            w.place(spin);
            let seen = w.load_acquire_gpu(addr);
            let again = w.icmp(ICmp::Ne, seen, value);
            w.cond_br(again, &spin, &[], &cont, &[]);
            w.place(cont);
            site.sync();
            Ok(None)
        }
        OpKind::ReleaseFlag => {
            site.sync();
            let w = site.writer();
            let cont = w.block(&[]);
            let store = w.block(&[]);
            w.cond_br(leader, &store, &[], &cont, &[]);
            w.place(store);
            w.store_release_gpu(value, addr);
            w.br(&cont, &[]);
            w.place(cont);
            Ok(None)
        }
        _ => {
            let slot = site.flag_slot(&op.loc)?;
            site.sync();
            let w = site.writer();
            let at = w.i32(slot as i64);
            let cont = w.block(&[]);
            let add = w.block(&[]);
            w.cond_br(leader, &add, &[], &cont, &[]);
            w.place(add);
            w.fence_acq_rel_gpu();
            let one = w.i32(1);
            let old = w.atomic_add_gpu(addr, one);
            w.fence_acq_rel_gpu();
            let p = w.smem_addr(at);
            w.store(old.v, p, 4);
            w.br(&cont, &[]);
            w.place(cont);
            site.sync();
            let w = site.writer();
            let p = w.smem_addr(at);
            let i32t = w.ty(ScalarType::I32);
            let old = w.load(p, i32t, 4);
            let old = V {
                v: old,
                t: ScalarType::I32,
            };
            Ok(Some(w.int_cast(old, ScalarType::Index)))
        }
    }
}
