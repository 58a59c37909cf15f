//! Synchronization: `tile.warp_specialize` (barrier init, producer and consumer regions),
//! mbarriers (`nvvm.mbarrier.*`), named barriers, bulk async-groups, and the Blackwell
//! try_cancel ops.
//!
//! Every construct is an NVVM op of MLIR 22: `nvvm.mbarrier.*`, `nvvm.barrier` (named,
//! with a thread count), `nvvm.bar.warp.sync`, `nvvm.cluster.arrive` / `nvvm.cluster.wait`,
//! `nvvm.mapa` with a cluster-scope `nvvm.mbarrier.arrive`, `nvvm.cp.async.bulk.commit.group`
//! / `nvvm.cp.async.bulk.wait_group` (in a block only the elected thread runs: the ops take
//! no predicate), `nvvm.clusterlaunchcontrol.try.cancel`. The one inline-asm statement is
//! the try_cancel query ([`Gemm::lower_clc_query`] says why).

use super::{err, Gemm, Lv, R};
use crate::nvvm::writer::{ICmp, V};
use melior::ir::attribute::IntegerAttribute;
use tilec_dialect::{Attribute as TileAttr, Diagnostic, OpKind, Operation, ScalarType};

/// Cycles hint of `mbarrier.try_wait.parity` (the op loops until the phase completes).
const TRY_WAIT_TICKS: i64 = 10_000_000;

impl<'c, 'm> Gemm<'c, 'm, '_> {
    /// Barrier init by thread 0, made visible to the async proxy and the CTA; then
    /// warpgroup 0 (the producer: its thread 0 runs region 0) and the consumers (region 1
    /// and the rest of the kernel).
    pub(super) fn lower_warp_specialize(&mut self, op: &Operation) -> R<()> {
        let tid = self.tid;
        let z = self.i32(0);
        let t0 = self.w.icmp(ICmp::Eq, tid, z);
        let init = self.w.block(&[]);
        let after_init = self.w.block(&[]);
        self.w.cond_br(t0, &init, &[], &after_init, &[]);
        self.w.place(init);
        for (offset, count, arrive) in self.barrier_inits.clone() {
            for s in 0..count {
                let o = self.i32((offset + 8 * s) as i64);
                let p = self.gep3(o);
                let c = self.i32(arrive);
                self.w.op("nvvm.mbarrier.init", &[p, c.v], &[], &[]);
            }
        }
        self.w.op("nvvm.fence.mbarrier.init", &[], &[], &[]);
        self.w.br(&after_init, &[]);
        self.w.place(after_init);
        self.w.barrier();
        if self.cluster_size > 1 {
            // Peers arrive on this CTA's barriers and multicast into its shared memory: the
            // whole cluster sees every barrier initialised before anyone goes on.
            self.cluster_barrier(true);
        }
        if self.producer_threads > 0 {
            let pt = self.i32(self.producer_threads);
            let is_p = self.w.icmp(ICmp::Ult, tid, pt);
            let producer = self.w.block(&[]);
            let consumer = self.w.block(&[]);
            self.w.cond_br(is_p, &producer, &[], &consumer, &[]);
            self.w.place(producer);
            if self.target.has_setmaxnreg() {
                self.w.setmaxnreg(false, 40);
            }
            let t0b = self.w.icmp(ICmp::Eq, tid, z);
            let elected = self.w.block(&[]);
            self.w.cond_br(t0b, &elected, &[], &self.exit, &[]);
            self.w.place(elected);
            self.in_producer = true;
            let r = self.lower_block(&op.regions[0].ops);
            self.in_producer = false;
            r?;
            self.w.br(&self.exit, &[]);
            self.w.place(consumer);
        } else if let Some(o) = op.regions[0].ops.iter().find(|o| o.kind != OpKind::Yield) {
            return err(
                o,
                "convert-tile-to-nvvm: the kernel's block is only the consumer warpgroups, so \
                 no thread runs the producer region of 'tile.warp_specialize': leave it empty \
                 (the consumers issue the copies, `role = \"scheduler\"`)",
            );
        }
        if self.target.has_setmaxnreg() && self.producer_threads > 0 {
            self.w.setmaxnreg(true, 232);
        }
        // The consumer warpgroup: the CTA's, less the producer's (one warpgroup, or none).
        let c128 = self.i32(128);
        let wg = self.bin("udiv", tid, c128);
        let pw = self.i32((self.producer_threads as u64).div_ceil(128) as i64);
        self.cwg = Some(self.bin("sub", wg, pw));
        if self.mma_sync {
            // Consumer warps 0..7 (after the producer, if any) in a 2 x 4 grid of 64 x 64
            // tiles.
            let c5 = self.i32(5);
            let w = self.bin("lshr", tid, c5);
            let p = self.i32(self.producer_threads / 32);
            let cw = self.bin("sub", w, p);
            let c2 = self.i32(2);
            let c3 = self.i32(3);
            let wm = self.bin("lshr", cw, c2);
            let wn = self.bin("and", cw, c3);
            self.warp_mn = Some((wm, wn));
        }
        self.frag_rc = Some(self.frag_base(op)?);
        self.lower_block(&op.regions[1].ops)?;
        let y = op.regions[1].ops.last().expect("verified yield");
        for (r, v) in op.results.iter().zip(&y.operands) {
            let lv = self
                .vals
                .get(v)
                .cloned()
                .ok_or_else(|| Diagnostic::error(y.loc.clone(), "yielded value not lowered"))?;
            self.vals.insert(*r, lv);
        }
        Ok(())
    }

    /// An op with `role = "scheduler"` in the consumer region (a kernel whose consumers
    /// issue their own copies): on the consumers' first thread alone, which is why it may
    /// have no results and hold only what one thread can run
    /// ([`crate::nvvm::clc::scheduler_may_run`]; no tile values).
    pub(super) fn lower_scheduler_op(&mut self, op: &Operation) -> R<()> {
        if self.cwg.is_none() {
            return err(
                op,
                format!(
                    "'{}' with role = \"scheduler\" outside 'tile.warp_specialize': in a GEMM \
                     kernel the scheduler is the producer's elected thread or the consumers' \
                     first thread, in its regions",
                    op.kind.name()
                ),
            );
        }
        crate::nvvm::clc::check_scheduler_code(
            self.m,
            op,
            "the consumers' first thread alone in a GEMM kernel",
        )?;
        let first = self.i32(self.producer_threads);
        let lead = self.w.icmp(ICmp::Eq, self.tid, first);
        let go = self.w.block(&[]);
        let cont = self.w.block(&[]);
        self.w.cond_br(lead, &go, &[], &cont, &[]);
        self.w.place(go);
        self.scheduler = true;
        let r = self.lower_op(op);
        self.scheduler = false;
        r?;
        self.w.br(&cont, &[]);
        self.w.place(cont);
        Ok(())
    }

    /// Refuses, at the op, an op that one thread must issue for the CTA (a TMA copy, an
    /// `expect_tx` arm, a try_cancel request) where every thread would run it: outside the
    /// producer region and the scheduler's code.
    pub(super) fn check_one_thread_op(&self, op: &Operation, one_thread: bool) -> R<()> {
        let single = matches!(
            op.kind,
            OpKind::TmaLoad | OpKind::MbarrierExpectTx | OpKind::ClcTryCancel
        );
        if single && !one_thread {
            return err(
                op,
                format!(
                    "'{}' in a GEMM kernel is issued by one thread for the CTA: in the producer \
                     region, or with role = \"scheduler\" (the consumers' first thread); here \
                     every thread would run it",
                    op.kind.name()
                ),
            );
        }
        Ok(())
    }

    /// A cluster barrier ([`crate::nvvm::writer::Writer::cluster_barrier`]).
    pub(super) fn cluster_barrier(&mut self, aligned: bool) {
        self.w.cluster_barrier(aligned);
    }

    pub(super) fn lower_mbarrier_wait(&mut self, op: &Operation) -> R<()> {
        let a = self.bar_addr(op, op.operands[0], op.operands[1])?;
        let p = self.scalar(op, op.operands[2])?;
        let p32 = self.trunc32(p);
        let t = self.i32(TRY_WAIT_TICKS);
        self.w
            .op("nvvm.mbarrier.try_wait.parity", &[a, p32.v, t.v], &[], &[]);
        Ok(())
    }

    pub(super) fn lower_expect_tx(&mut self, op: &Operation) -> R<()> {
        let a = self.bar_addr(op, op.operands[0], op.operands[1])?;
        let b = self.i32(op.int_attr("bytes").unwrap_or(0));
        self.w
            .op("nvvm.mbarrier.arrive.expect_tx", &[a, b.v], &[], &[]);
        Ok(())
    }

    /// One arrive per warp (lane 0), matching arrive_count = 4 × consumer warpgroups. The
    /// arrive releases what every lane of the warp read: unless a `.sync.aligned` wait
    /// just converged the warp, `bar.warp.sync` orders the other lanes' reads first (not in
    /// the producer region, where one thread runs). `{cta = r}`: `mapa` + an arrive on CTA
    /// r's barrier (`Writer::mbarrier_arrive_at`).
    /// This CTA's line of the cluster along dimension `d` (the CTAs that differ from it only
    /// there): its index i on the line (`%cluster_ctaid` along d, i32), the rank stride of
    /// the line (the cluster's sizes before d multiplied), and the line's first rank
    /// (`%cluster_ctarank` − i·stride, i32), PTX ISA §10.25–10.26.
    pub(super) fn cluster_line(&mut self, d: usize) -> (V<'c, 'm>, i64, V<'c, 'm>) {
        let stride: i64 = self.cluster[..d].iter().product();
        let id = self
            .w
            .sreg(&format!("cluster.ctaid.{}", ["x", "y", "z"][d]));
        let rank = self.w.sreg("cluster.ctarank");
        let sc = self.i32(stride);
        let back = self.bin("mul", id, sc);
        let first = self.bin("sub", rank, back);
        (id, stride, first)
    }

    pub(super) fn lower_arrive(&mut self, op: &Operation) -> R<()> {
        if self.cwg.is_some() && self.prev != Some(OpKind::WaitGroup) {
            let all = self.i32(-1);
            self.w.op("nvvm.bar.warp.sync", &[all.v], &[], &[]);
        }
        let a = self.bar_addr(op, op.operands[0], op.operands[1])?;
        let z = self.i32(0);
        let l0 = self.w.icmp(ICmp::Eq, self.lane, z);
        let go = self.w.block(&[]);
        let cont = self.w.block(&[]);
        self.w.cond_br(l0, &go, &[], &cont, &[]);
        self.w.place(go);
        self.w.mbarrier_arrive(a, op.int_attr("cta"));
        if let Some(dims) = op
            .attr("peer_dims")
            .and_then(tilec_dialect::Attribute::as_array)
        {
            // Every CTA that differs from this one only along d: ranks first + j·stride for
            // the other positions j of the line.
            for d in dims.iter().filter_map(tilec_dialect::Attribute::as_int) {
                let d = d.clamp(0, 2) as usize;
                let n = self.cluster[d];
                let (id, stride, first) = self.cluster_line(d);
                let sc = self.i32(stride);
                let cn = self.i32(n);
                for o in 1..n {
                    // Position (i + o) mod n of the line.
                    let co = self.i32(o);
                    let j = self.bin("add", id, co);
                    let j = self.bin("urem", j, cn);
                    let js = self.bin("mul", j, sc);
                    let r = self.bin("add", first, js);
                    self.w.mbarrier_arrive_at(a, r.v, false);
                }
            }
        }
        self.w.br(&cont, &[]);
        self.w.place(cont);
        Ok(())
    }

    /// Shared-memory address of slot `operands[last]` of the response ring `operands[0]`
    /// (16 bytes per slot).
    fn clc_slot_addr(&mut self, op: &Operation) -> R<V<'c, 'm>> {
        let ring = self.ring(op, op.operands[0], "the try_cancel response")?;
        if ring.stage_bytes != 16 || ring.offset % 16 != 0 {
            return err(
                op,
                format!(
                    "a try_cancel response slot must be 16 bytes, 16-byte aligned; found {} \
                     bytes at offset {}",
                    ring.stage_bytes, ring.offset
                ),
            );
        }
        let slot = self.scalar(op, *op.operands.last().expect("verified"))?;
        let s32 = self.trunc32(slot);
        let c4 = self.i32(4);
        let so = self.bin("shl", s32, c4);
        let base = self.i32(ring.offset as i64);
        let o = self.bin("add", so, base);
        Ok(self.bin("add", self.smem_i32, o))
    }

    pub(super) fn lower_try_cancel(&mut self, op: &Operation) -> R<()> {
        let slot = self.clc_slot_addr(op)?;
        let p3 = self.w.ptr_ty(3);
        let slot = self.w.cast("llvm.inttoptr", slot.v, p3);
        let b = self.bar_addr(op, op.operands[1], op.operands[2])?;
        let multicast = op.attr("multicast").and_then(TileAttr::as_bool) == Some(true);
        self.w.clc_try_cancel(slot, b, multicast);
        Ok(())
    }

    /// The response's flag and first CTA id ([`crate::nvvm::writer::Writer::clc_query`]).
    pub(super) fn lower_clc_query(&mut self, op: &Operation) -> R<()> {
        let bits = op.int_attr("load_bits").unwrap_or(128);
        if bits != 128 {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: a try_cancel response is an opaque 128-bit value \
                     read with one ld.shared.b128; load_bits = {bits} is not lowered"
                ),
            );
        }
        let slot = self.clc_slot_addr(op)?;
        let (ok, ids) = self.w.clc_query(slot);
        self.vals.insert(op.results[0], Lv::Scalar(ok));
        for (d, x) in ids.into_iter().enumerate() {
            let x64 = self.zext64(x);
            self.vals.insert(op.results[d + 1], Lv::Scalar(x64));
        }
        Ok(())
    }

    /// Runs `body` in a block that only the consumer warpgroup's elected thread enters.
    fn on_elected(&mut self, body: impl FnOnce(&mut Self)) {
        let p = self.elected();
        let z = self.i32(0);
        let go = self.w.icmp(ICmp::Ne, p, z);
        let then = self.w.block(&[]);
        let cont = self.w.block(&[]);
        self.w.cond_br(go, &then, &[], &cont, &[]);
        self.w.place(then);
        body(self);
        self.w.br(&cont, &[]);
        self.w.place(cont);
    }

    /// `cp.async.bulk.commit_group` on the consumer warpgroup's elected thread.
    pub(super) fn lower_bulk_commit(&mut self) {
        self.on_elected(|g| {
            g.w.op("nvvm.cp.async.bulk.commit.group", &[], &[], &[]);
        });
    }

    /// `cp.async.bulk.wait_group[.read] N` on the consumer warpgroup's elected thread.
    pub(super) fn lower_bulk_wait(&mut self, op: &Operation) {
        let n = op.int_attr("pending").unwrap_or(0);
        let read = op.attr("read").and_then(TileAttr::as_bool) == Some(true);
        self.on_elected(|g| {
            let i32t = g.w.ty(ScalarType::I32);
            let mut attrs = vec![("group", IntegerAttribute::new(i32t, n).into())];
            if read {
                attrs.push(("read", melior::ir::Attribute::unit(g.w.ctx)));
            }
            g.w.op("nvvm.cp.async.bulk.wait_group", &[], &[], &attrs);
        });
    }

    /// `bar.sync id, threads`; in the consumer region a one-warpgroup barrier is per
    /// warpgroup: `bar.sync id + w, 128`.
    pub(super) fn lower_named_barrier(&mut self, op: &Operation) -> R<()> {
        let id = op.int_attr("id").unwrap_or(1);
        let threads = op.int_attr("threads").unwrap_or(128);
        let idv = match self.cwg {
            Some(cwg) if threads == 128 => {
                if id + self.consumer_wgs - 1 > 15 {
                    return err(
                        op,
                        format!(
                            "convert-tile-to-nvvm: named barrier {id} + consumer warpgroup \
                             index exceeds barrier 15"
                        ),
                    );
                }
                let c = self.i32(id);
                self.bin("add", cwg, c)
            }
            _ => self.i32(id),
        };
        self.bar_sync(idv, threads);
        Ok(())
    }
}

impl<'c, 'm> Gemm<'c, 'm, '_> {
    /// `tile.wait_flag`, `tile.release_flag` and `tile.arrive_flag` in the consumer region
    /// ([`crate::nvvm::flags`]): the first consumer thread touches the flag; the barrier is
    /// the epilogue's consumer-wide one (named barrier `1 + consumer warpgroups`).
    ///
    /// # Errors
    /// Outside the consumer region (the epilogue); a release or an arrive in a kernel whose
    /// epilogue stores with TMA (those writes complete asynchronously, unordered with the
    /// flag).
    pub(super) fn lower_flag(&mut self, op: &Operation) -> R<()> {
        let name = op.kind.name();
        if self.cwg.is_none() {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: in a GEMM kernel '{name}' must stand in the \
                     epilogue, after the K loop, where the consumer warpgroups run"
                ),
            );
        }
        if op.kind != OpKind::WaitFlag && self.tma_stores {
            return err(
                op,
                format!(
                    "convert-tile-to-nvvm: '{name}' in a kernel whose epilogue stores with TMA \
                     is not lowered (the bulk copies complete after the flag is set); store \
                     the epilogue directly (--epilogue-store direct)"
                ),
            );
        }
        let Some(Lv::TensorPtr(t)) = self.vals.get(&op.operands[0]).cloned() else {
            return err(op, format!("'{name}': the flags are not a pointer tensor"));
        };
        let pos = self.scalar(op, op.operands[1])?;
        let value = match op.operands.get(2) {
            Some(&v) => {
                let v = self.scalar(op, v)?;
                self.trunc32(v)
            }
            None => self.i32(0),
        };
        let elems = self.bin("mul", pos, t.strides[0]);
        let p1 = self.w.ptr_ty(1);
        let base = self.w.cast("llvm.inttoptr", t.ptr.v, p1);
        let i32t = self.w.ty(ScalarType::I32);
        let addr = self.w.gep(base, elems, i32t, p1);
        let first = self.i32(self.producer_threads);
        let leader = self.w.icmp(ICmp::Eq, self.tid, first);
        if let Some(old) = crate::nvvm::flags::lower(self, op, addr, value, leader)? {
            self.def_scalar(op, old);
        }
        self.prev = Some(op.kind);
        Ok(())
    }
}
