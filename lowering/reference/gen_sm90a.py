#!/usr/bin/env python3
"""Generator for the reference MLIR module lowering/reference/gemm_bf16_sm90a.mlir.

The output is the deliverable; this script only saves typing the 128-wide accumulator
struct, the unrolled 4-instruction wgmma chains and the 128-element epilogue.

Options (for experiments):  --b-lbo-sbo-swap   swap LBO/SBO in the B descriptor
                            --no-setmaxnreg
                            --kernel NAME
"""
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("--b-lbo-sbo-swap", action="store_true")
ap.add_argument("--no-setmaxnreg", action="store_true")
ap.add_argument("--kernel", default="gemm_bf16")
ap.add_argument("--group-m", type=int, default=16, help="grouped rasterization: M tiles per group (0 = off)")
ap.add_argument("--diag-no-store", action="store_true", help="DIAGNOSTIC: skip the C stores (wrong results)")
ap.add_argument("--plain-wait", action="store_true", help="EXPERIMENT: use the operand-less nvvm wait op")
ap.add_argument("-o", "--output")
args = ap.parse_args()

# ---- tile configuration -------------------------------------------------------------
BM, BN, BK = 128, 256, 64
STAGES = 4
A_STAGE = BM * BK * 2           # 16384
B_BOX = 64 * 64 * 2             # 8192: one TMA box of B, 64(K) x 64(N)
B_STAGE = BK * BN * 2           # 32768
TX_BYTES = A_STAGE + B_STAGE    # 49152 bytes per stage, counted by the full barrier
BAR_REGION = 1024               # barriers live in the first 1 KiB (keeps stages 1024-aligned)
A_OFF = BAR_REGION
B_OFF = A_OFF + STAGES * A_STAGE
SMEM_BYTES = B_OFF + STAGES * B_STAGE   # 197632
NACC = 128                      # f32 accumulator registers per thread for m64n256
CONSUMER_WARPS = 8
PRODUCER_REGS, CONSUMER_REGS = 40, 232

ACC = "!acc"
out = []


def emit(s=""):
    out.append(s)


class Names:
    def __init__(self):
        self.n = 0

    def __call__(self, hint="v"):
        self.n += 1
        return "%%%s_%d" % (hint, self.n)


fresh = Names()
consts = {}


def cst(v, t="i32"):
    """Constants are emitted once in the entry block."""
    key = (v, t)
    if key not in consts:
        name = "%%c%s_%s" % (str(v).replace("-", "m"), t)
        consts[key] = name
        emit("    %s = llvm.mlir.constant(%d : %s) : %s" % (name, v, t, t))
    return consts[key]


def op(text, hint="v"):
    r = fresh(hint)
    emit("    %s = %s" % (r, text))
    return r


def binop(o, a, b, t="i32", hint="v"):
    return op("llvm.%s %s, %s : %s" % (o, a, b, t), hint)


def icmp(pred, a, b, t="i32", hint="p"):
    return op('llvm.icmp "%s" %s, %s : %s' % (pred, a, b, t), hint)


def gep_i8(base, off, space=3, hint="ptr"):
    return op("llvm.getelementptr %s[%s] : (!llvm.ptr<%d>, i32) -> !llvm.ptr<%d>, i8"
              % (base, off, space, space), hint)


def wait_asm(acc, n):
    """wgmma.wait_group N with the accumulator threaded through as tied operands."""
    if args.plain_wait:
        emit("    nvvm.wgmma.wait.group.sync.aligned %d" % n)
        return acc
    elems = [op("llvm.extractvalue %s[%d] : %s" % (acc, i, ACC), "a") for i in range(NACC)]
    cons = ",".join(["=f"] * NACC + [str(i) for i in range(NACC)])
    return op('llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned %d;", "%s" %s : (%s) -> %s'
              % (n, cons, ", ".join(elems), ", ".join(["f32"] * NACC), ACC), "acc")


acc_ty = "!llvm.struct<(" + ", ".join(["f32"] * NACC) + ")>"

# ---- module header ---------------------------------------------------------------------
emit("// Reference bf16 GEMM for sm_90a: C[M,N] = A[M,K] * B[K,N], all row-major.")
emit("// The Rust lowering reproduces this module op by op (see README.md beside this file). The")
emit("// mechanical parts (128-wide accumulator struct, tied-operand lists, unrolled epilogue) were")
emit("// written out by a small generator script; the structure and every comment are the reference.")
emit("//")
emit("// CTA tile 128x256x64, 384 threads: warpgroup 0 = TMA producer (one thread issues),")
emit("// warpgroups 1 and 2 = wgmma consumers, each owning 64x256 of the f32 accumulator.")
emit("// %d-stage ring in dynamic shared memory (A stage 16 KiB, B stage 32 KiB, 128B swizzle)," % STAGES)
emit("// full/empty mbarriers per stage. Dynamic shared memory: %d bytes:" % SMEM_BYTES)
emit("//   [0, 1024)            mbarriers: full[s] at 8*s, empty[s] at 32 + 8*s (s < 4)")
emit("//   [%d, %d)      A stages, 16 KiB each: 128 rows (M) x 128 B (64 K elements), SW128" % (A_OFF, B_OFF))
emit("//   [%d, %d)   B stages, 32 KiB each: 4 TMA boxes of 64 rows (K) x 128 B (64 N elements), SW128" % (B_OFF, SMEM_BYTES))
emit("")
emit("// Accumulator ordering: nvvm.wgmma.mma_async returns the accumulator struct, but")
emit("// nvvm.wgmma.wait.group.sync.aligned takes no operands, so LLVM may schedule pure uses of the")
emit("// accumulator (extractvalue, cvt, phi copies) above the wait. Every wait_group here is therefore")
emit("// an llvm.inline_asm \"wgmma.wait_group.sync.aligned N;\" that takes the 128 accumulator values")
emit("// as tied operands (\"=f\" x 128, then \"0\"..\"127\") and returns them: every later use depends")
emit("// on the wait's result, and the tied constraints keep the registers identical (no moves).")
emit("// The accumulator is zeroed by scale-d = 0 on the first mma of the peeled k-tile 0, not by")
emit("// register moves, so nothing but wgmma defines accumulator registers inside a fence..commit window.")
emit("")
emit("// The accumulator of one consumer warpgroup: m64n256 f32 = 128 registers per thread.")
emit("!acc = %s" % acc_ty)
emit("")
emit("module attributes {gpu.container_module} {")
emit("gpu.module @%s_module {" % args.kernel)
emit("  // Dynamic shared memory: a zero-sized extern .shared array, 1024-aligned (SW128 atoms")
emit("  // are 1024 B and the wgmma descriptors assume base_offset = 0).")
emit("  llvm.mlir.global external @dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>")
emit("")
emit("  // Kernel ABI (docs/manifest.md): A, B tensor maps (128 B, by value, __grid_constant__),")
emit("  // C as pointer + 2 sizes + 2 strides (u64, elements), then the scalars M, N, K (i64).")
emit("  // A tensor map param is `!llvm.ptr` with llvm.byval = !llvm.array<128 x i8>, llvm.align = 64")
emit("  // and nvvm.grid_constant: NVPTX prints `.param .align 64 .b8 NAME[128]` and the op gets the")
emit("  // param's generic address (cvta.param), which cp.async.bulk.tensor accepts.")
tm_attr = "{llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}"
emit("  llvm.func @%s(%%tmap_a: !llvm.ptr %s, %%tmap_b: !llvm.ptr %s," % (args.kernel, tm_attr, tm_attr))
emit("      %c_ptr: i64, %c_size0: i64, %c_size1: i64, %c_stride0: i64, %c_stride1: i64,")
emit("      %M: i64, %N: i64, %K: i64)")
emit("      attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32} {")
emit("    // nvvm.maxntid + nvvm.minctasm = 1 give ptxas a register cap at entry (65536/384 -> 168),")
emit("    // which setmaxnreg needs to take effect.")
emit("")
emit("    // ---- entry: ids, tile origin, k-tile count, shared-memory addresses ----")
tid = op("nvvm.read.ptx.sreg.tid.x : i32", "tid")
bx = op("nvvm.read.ptx.sreg.ctaid.x : i32", "ctaid_x")
by = op("nvvm.read.ptx.sreg.ctaid.y : i32", "ctaid_y")
wg = binop("udiv", tid, cst(128), hint="wg")
lane = binop("and", tid, cst(31), hint="lane")
if args.group_m:
    G = args.group_m
    emit("    // Grouped rasterization for L2 reuse: the launch grid stays (ceildiv(N,256), ceildiv(M,128));")
    emit("    // the linear CTA id is remapped so that consecutive CTAs sweep %d M-tiles before moving" % G)
    emit("    // along N (a wave then shares A rows and B columns in L2).")
    gn = op("nvvm.read.ptx.sreg.nctaid.x : i32", "grid_n")
    gm = op("nvvm.read.ptx.sreg.nctaid.y : i32", "grid_m")
    pid = binop("add", binop("mul", by, gn), bx, hint="pid")
    npg = binop("mul", gn, cst(G), hint="per_group")
    gid = binop("udiv", pid, npg, hint="group")
    first_m = binop("mul", gid, cst(G), hint="first_m")
    gsz = op("llvm.intr.umin(%s, %s) : (i32, i32) -> i32" % (binop("sub", gm, first_m), cst(G)), "group_rows")
    r = binop("sub", pid, binop("mul", gid, npg), hint="in_group")
    tile_m = binop("add", first_m, binop("urem", r, gsz), hint="tile_m")
    tile_n = binop("udiv", r, gsz, hint="tile_n")
else:
    tile_m, tile_n = by, bx
n0 = binop("mul", tile_n, cst(BN), hint="n0")      # first column of this CTA's C tile
m0 = binop("mul", tile_m, cst(BM), hint="m0")      # first row
k64 = op("llvm.trunc %K : i64 to i32", "k32")
kp = binop("add", k64, cst(BK - 1))
nk = binop("udiv", kp, cst(BK), hint="ceil_k")     # ceildiv(K, 64); TMA zero-fills the K tail
emit("    // num_k = max(ceildiv(K, 64), 1): a tensor map cannot encode K = 0, so K >= 1 in practice;")
emit("    // the max keeps the peeled first k-tile (scale-d = 0) unconditional.")
numk = op("llvm.intr.umax(%s, %s) : (i32, i32) -> i32" % (nk, cst(1)), "num_k")
smem = op("llvm.mlir.addressof @dynamic_smem : !llvm.ptr<3>", "smem")
smem_i32 = op("llvm.ptrtoint %s : !llvm.ptr<3> to i32" % smem, "smem_addr")
emit("    // Barrier and stage addresses are computed from the stage index at use; no arrays.")
emit("    llvm.cond_br %s, ^init, ^after_init" % icmp("eq", tid, cst(0)))
emit("")
emit("  ^init:  // ---- [mbarrier.init] thread 0 ----")
emit("    // full[s]: 1 arrival (the producer's arrive.expect_tx) + %d transaction bytes per phase." % TX_BYTES)
emit("    // empty[s]: %d arrivals (lane 0 of each consumer warp, after its wgmma reading s completed)." % CONSUMER_WARPS)
for s in range(STAGES):
    f = gep_i8(smem, cst(8 * s), hint="full")
    emit("    nvvm.mbarrier.init %s, %s : !llvm.ptr<3>, i32" % (f, cst(1)))
    e = gep_i8(smem, cst(32 + 8 * s), hint="empty")
    emit("    nvvm.mbarrier.init %s, %s : !llvm.ptr<3>, i32" % (e, cst(CONSUMER_WARPS)))
emit("    // Make the inits visible to the async proxy (TMA complete_tx) and the other threads.")
emit("    nvvm.fence.mbarrier.init")
emit("    llvm.br ^after_init")
emit("")
emit("  ^after_init:")
emit("    nvvm.barrier0")
emit("    llvm.cond_br %s, ^producer, ^consumer" % icmp("eq", wg, cst(0), hint="is_producer"))
emit("")

# ---- producer ---------------------------------------------------------------------------
emit("  ^producer:  // ---- warpgroup 0: TMA producer ----")
if not args.no_setmaxnreg:
    emit("    // Give registers back to the consumers (all 128 threads of the warpgroup execute it).")
    emit("    nvvm.setmaxregister decrease %d" % PRODUCER_REGS)
emit("    llvm.cond_br %s, ^p_loop(%s : i32), ^exit" % (icmp("eq", tid, cst(0), hint="is_elected"), cst(0)))
emit("")
emit("  ^p_loop(%p_kt: i32):")
emit("    llvm.cond_br %s, ^p_body, ^exit" % icmp("ult", "%p_kt", numk))
emit("")
emit("  ^p_body:")
s = binop("and", "%p_kt", cst(STAGES - 1), hint="p_stage")
rnd = binop("lshr", "%p_kt", cst(2), hint="p_round")
ph = binop("and", rnd, cst(1), hint="p_phase")
eph = binop("xor", ph, cst(1), hint="p_empty_parity")
emit("    // [wait.parity empty[s]] parity (round & 1) ^ 1, so round 0 passes on the fresh barrier.")
eoff = binop("add", binop("shl", s, cst(3)), cst(32))
ebar = gep_i8(smem, eoff, hint="empty")
emit("    nvvm.mbarrier.try_wait.parity %s, %s, %s : !llvm.ptr<3>, i32, i32" % (ebar, eph, cst(10000000)))
emit("    // [expect_tx full[s]] arrive + arm for the bytes of all 5 boxes (OOB zero-fill counts in full).")
fbar = gep_i8(smem, binop("shl", s, cst(3)), hint="full")
emit("    nvvm.mbarrier.arrive.expect_tx %s, %s : !llvm.ptr<3>, i32" % (fbar, cst(TX_BYTES)))
kc = binop("mul", "%p_kt", cst(BK), hint="k0")
emit("    // [tma.issue] Coordinates are innermost first: A (k, m), B (n, k). The destination is the")
emit("    // CTA's own shared::cta address cast to shared::cluster (addrspace 7): MLIR 22's op only")
emit("    // takes a ptr<7> destination unless isCTAOnly (which needs PTX 8.6).")
a_dst = gep_i8(smem, binop("add", binop("mul", s, cst(A_STAGE)), cst(A_OFF)), hint="a_dst")
a_dst7 = op("llvm.addrspacecast %s : !llvm.ptr<3> to !llvm.ptr<7>" % a_dst, "a_dst_cl")
emit("    nvvm.cp.async.bulk.tensor.shared.cluster.global %s, %%tmap_a, %s, box[%s, %s] : !llvm.ptr<7>, !llvm.ptr"
     % (a_dst7, fbar, kc, m0))
b_base = binop("add", binop("mul", s, cst(B_STAGE)), cst(B_OFF), hint="b_off")
for j in range(4):
    b_dst = gep_i8(smem, binop("add", b_base, cst(j * B_BOX)), hint="b_dst")
    b_dst7 = op("llvm.addrspacecast %s : !llvm.ptr<3> to !llvm.ptr<7>" % b_dst, "b_dst_cl")
    nj = binop("add", n0, cst(64 * j))
    emit("    nvvm.cp.async.bulk.tensor.shared.cluster.global %s, %%tmap_b, %s, box[%s, %s] : !llvm.ptr<7>, !llvm.ptr"
         % (b_dst7, fbar, nj, kc))
emit("    llvm.br ^p_loop(%s : i32)" % binop("add", "%p_kt", cst(1)))
emit("")

# ---- consumer ---------------------------------------------------------------------------
emit("  ^consumer:  // ---- warpgroups 1, 2: wgmma consumers ----")
if not args.no_setmaxnreg:
    emit("    nvvm.setmaxregister increase %d" % CONSUMER_REGS)
cwg = binop("sub", wg, cst(1), hint="cwg")            # 0 or 1: which 64-row half of the tile
# Descriptor constant parts.
#   bits 0-13 start address >> 4; 16-29 LBO >> 4; 32-45 SBO >> 4; 62-63 layout (1 = 128B swizzle)
# A: K-major SW128; SBO = 1024 (8 rows x 128 B), LBO unused (1).
# B: MN-major SW128 (transposed); LBO = 8192 (next 64-wide N chunk = next TMA box),
#    SBO = 1024 (next 8 K rows).  CUTLASS canonical ((8,n),(8,k)):((1,LBO),(8,SBO)) in 16 B units.
A_LBO, A_SBO = 16, 1024
B_LBO, B_SBO = (B_BOX, 1024) if not args.b_lbo_sbo_swap else (1024, B_BOX)
descA_hi = (1 << 62) | ((A_SBO >> 4) << 32) | ((A_LBO >> 4) << 16)
descB_hi = (1 << 62) | ((B_SBO >> 4) << 32) | ((B_LBO >> 4) << 16)
emit("    // wgmma smem descriptors: desc = layout(1 = SW128)<<62 | (SBO>>4)<<32 | (LBO>>4)<<16 | addr>>4.")
emit("    //   A (K-major, SW128): SBO = %d (8 rows x 128 B), LBO = %d (unused for swizzled K-major)." % (A_SBO, A_LBO))
emit("    //   B (N-major = transposed, SW128): LBO = %d (next 64-wide N chunk = next TMA box)," % B_LBO)
emit("    //     SBO = %d (next 8 K rows). Start addresses advance per stage and per k16 step:" % B_SBO)
emit("    //     A by 32 B inside the 128 B swizzled row, B by 16 rows x 128 B = 2048 B.")
emit("    //   The 14-bit address field is added to directly (addresses < 256 KiB, no carry).")
a_cons_off = binop("add", binop("mul", cwg, cst(64 * 128)), cst(A_OFF), hint="a_wg_off")  # 64 rows x 128 B
a_addr0 = binop("add", smem_i32, a_cons_off)
b_addr0 = binop("add", smem_i32, cst(B_OFF))
a_lo = op("llvm.zext %s : i32 to i64" % binop("lshr", a_addr0, cst(4)))
b_lo = op("llvm.zext %s : i32 to i64" % binop("lshr", b_addr0, cst(4)))
descA0 = binop("or", a_lo, cst(descA_hi, "i64"), "i64", hint="descA0")
descB0 = binop("or", b_lo, cst(descB_hi, "i64"), "i64", hint="descB0")
warp_in_wg = binop("and", binop("lshr", tid, cst(5)), cst(3), hint="warp")
is_lane0 = icmp("eq", lane, cst(0), hint="is_lane0")
emit("    llvm.br ^c_first")
emit("")


def kstep_body(kt, first):
    """wait full[s] -> fence -> 4 x mma_async (K = 64) -> commit. Returns the chain's result."""
    s = binop("and", kt, cst(STAGES - 1), hint="c_stage")
    ph = binop("and", binop("lshr", kt, cst(2)), cst(1), hint="c_phase")
    emit("    // [wait.parity full[s]] parity (round & 1): the TMA bytes of this stage have landed.")
    fbar = gep_i8(smem, binop("shl", s, cst(3)), hint="full")
    emit("    nvvm.mbarrier.try_wait.parity %s, %s, %s : !llvm.ptr<3>, i32, i32" % (fbar, ph, cst(10000000)))
    dA = binop("add", descA0, op("llvm.zext %s : i32 to i64" % binop("mul", s, cst(A_STAGE >> 4))), "i64", hint="dA")
    dB = binop("add", descB0, op("llvm.zext %s : i32 to i64" % binop("mul", s, cst(B_STAGE >> 4))), "i64", hint="dB")
    emit("    // [wgmma.fence] orders earlier accesses to the accumulator registers before the mma chain")
    emit("    // (required before the first wgmma of the warpgroup and after any register write to it).")
    emit("    nvvm.wgmma.fence.aligned")
    acc = None
    for kk in range(4):
        da = dA if kk == 0 else binop("add", dA, cst((32 * kk) >> 4, "i64"), "i64", hint="dA")
        db = dB if kk == 0 else binop("add", dB, cst((2048 * kk) >> 4, "i64"), "i64", hint="dB")
        if kk == 0:
            emit("    // [mma_async chain] 4 x m64n256k16 over the 64-wide k-tile; A K-major, B transposed (layout row).")
        if first and kk == 0:
            emit("    // first mma of the tile: scale-d = 0 zeroes the accumulator (no register moves).")
            inp = op("llvm.mlir.undef : !acc", "acc_undef")
            scale = "zero"
        else:
            inp = acc if acc is not None else "%c_acc"
            scale = "one"
        acc = op("nvvm.wgmma.mma_async %s, %s, %s, <m = 64, n = 256, k = 16>, D[<f32>, <%s>], "
                 "A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !acc -> !acc" % (da, db, inp, scale), "acc")
    emit("    // [commit_group] the 4 mmas of this k-tile form one wgmma group.")
    emit("    nvvm.wgmma.commit.group.sync.aligned")
    return acc


emit("  ^c_first:  // ---- k-tile 0, peeled so the first mma can use scale-d = 0 ----")
acc = kstep_body(cst(0), True)
emit("    // [wait_group 1] keep this group in flight. Accumulator threaded through (tied operands).")
accw = wait_asm(acc, 1)
emit("    llvm.br ^c_loop(%s, %s : i32, !acc)" % (cst(1), accw))
emit("")
emit("  ^c_loop(%c_kt: i32, %c_acc: !acc):")
emit("    llvm.cond_br %s, ^c_body, ^c_drain" % icmp("ult", "%c_kt", numk))
emit("")
emit("  ^c_body:  // ---- steady state: k-tile kt ----")
acc = kstep_body("%c_kt", False)
emit("    // [wait_group 1] group kt stays in flight; group kt-1 (which read stage (kt-1)%4) is done.")
emit("    // The accumulator goes through the wait as tied \"=f\"/\"N\" operands, so no use of it can")
emit("    // be scheduled above the wait (the nvvm.wgmma.wait.group.sync.aligned op takes no operands).")
accw = wait_asm(acc, 1)
emit("    llvm.cond_br %s, ^c_release, ^c_latch" % is_lane0)
emit("")
emit("  ^c_release:  // [mbarrier.arrive empty] release stage (kt-1)%4 to the producer: one arrive per consumer warp")
prev = binop("and", binop("sub", "%c_kt", cst(1)), cst(STAGES - 1), hint="prev_stage")
ebar = gep_i8(smem, binop("add", binop("shl", prev, cst(3)), cst(32)), hint="empty")
emit("    nvvm.mbarrier.arrive %s : !llvm.ptr<3>" % ebar)
emit("    llvm.br ^c_latch")
emit("")
emit("  ^c_latch:")
emit("    llvm.br ^c_loop(%s, %s : i32, !acc)" % (binop("add", "%c_kt", cst(1)), accw))
emit("")
emit("  ^c_drain:  // ---- [wait_group 0] before the epilogue reads the accumulator ----")
accd = wait_asm("%c_acc", 0)
emit("    llvm.br ^epilogue(%s : !acc)" % accd)
emit("")

# ---- epilogue ---------------------------------------------------------------------------
emit("  ^epilogue(%e_acc: !acc):  // ---- [epilogue] f32 -> bf16, st.global with bounds checks ----")
emit("    // Fragment layout of m64nNk16 f32 D: value v of thread (warp w, lane l) of the warpgroup is")
emit("    //   row = 16 w + l/4 + 8 ((v/2) %% 2),  col = 8 (v/4) + 2 (l %% 4) + (v %% 2).")
row0 = binop("add", binop("add", m0, binop("mul", cwg, cst(64))),
             binop("add", binop("mul", warp_in_wg, cst(16)), binop("lshr", lane, cst(2))), hint="row0")
col0 = binop("add", n0, binop("mul", binop("and", lane, cst(3)), cst(2)), hint="col0")
row0_64 = op("llvm.zext %s : i32 to i64" % row0, "row0_64")
col0_64 = op("llvm.zext %s : i32 to i64" % col0, "col0_64")
m0_64 = op("llvm.zext %s : i32 to i64" % m0)
n0_64 = op("llvm.zext %s : i32 to i64" % n0)
emit("    // Fast path (uniform per CTA): whole 128x256 tile inside C, unit column stride, even row")
emit("    // stride, 4-byte aligned base: store bf16 pairs as 32-bit words without checks.")
f1 = icmp("ule", binop("add", m0_64, cst(BM, "i64"), "i64"), "%c_size0", "i64")
f2 = icmp("ule", binop("add", n0_64, cst(BN, "i64"), "i64"), "%c_size1", "i64")
f3 = icmp("eq", "%c_stride1", cst(1, "i64"), "i64")
f4 = icmp("eq", binop("and", "%c_stride0", cst(1, "i64"), "i64"), cst(0, "i64"), "i64")
f5 = icmp("eq", binop("and", "%c_ptr", cst(3, "i64"), "i64"), cst(0, "i64"), "i64")
fast = binop("and", binop("and", binop("and", f1, f2, "i1"), binop("and", f3, f4, "i1"), "i1"), f5, "i1", hint="fast")
cbase = op("llvm.inttoptr %c_ptr : i64 to !llvm.ptr<1>", "c_base")
if args.diag_no_store:
    emit("    llvm.cond_br %s, ^exit, ^epi_slow" % fast)
else:
    emit("    llvm.cond_br %s, ^epi_fast, ^epi_slow" % fast)
emit("")
emit("  ^epi_fast:")
# element offset of (row0, col0)
off0 = binop("add", binop("mul", row0_64, "%c_stride0", "i64"), col0_64, "i64")
p0 = op("llvm.getelementptr %s[%s] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16" % (cbase, off0), "p_row")
p8 = op("llvm.getelementptr %s[%s] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16"
        % (p0, binop("mul", "%c_stride0", cst(8, "i64"), "i64")), "p_row8")
undef2 = op("llvm.mlir.undef : vector<2xf32>", "u2")
for j in range(NACC // 4):
    for h in range(2):
        v = 4 * j + 2 * h
        x0 = op("llvm.extractvalue %%e_acc[%d] : !acc" % v, "x")
        x1 = op("llvm.extractvalue %%e_acc[%d] : !acc" % (v + 1), "x")
        vec = op("llvm.insertelement %s, %s[%s : i32] : vector<2xf32>" % (x0, undef2, cst(0)), "vec")
        vec = op("llvm.insertelement %s, %s[%s : i32] : vector<2xf32>" % (x1, vec, cst(1)), "vec")
        bf = op("llvm.fptrunc %s : vector<2xf32> to vector<2xbf16>" % vec, "bf")
        p = op("llvm.getelementptr %s[%d] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16" % (p8 if h else p0, 8 * j), "p")
        emit("    llvm.store %s, %s {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>" % (bf, p))
emit("    llvm.br ^exit")
emit("")
emit("  ^epi_slow:  // ragged or strided C: every element checked against (size0, size1)")
rows = [binop("add", row0_64, cst(8 * h, "i64"), "i64", hint="row") for h in range(2)]
rowok = [icmp("ult", r, "%c_size0", "i64", hint="rowok") for r in rows]
rowoff = [binop("mul", r, "%c_stride0", "i64", hint="rowoff") for r in rows]
blk = 0
for j in range(NACC // 4):
    for e in range(2):
        col = binop("add", col0_64, cst(8 * j + e, "i64"), "i64", hint="col")
        colok = icmp("ult", col, "%c_size1", "i64", hint="colok")
        coloff = binop("mul", col, "%c_stride1", "i64", hint="coloff")
        for h in range(2):
            v = 4 * j + 2 * h + e
            ok = binop("and", rowok[h], colok, "i1", hint="ok")
            emit("    llvm.cond_br %s, ^st%d, ^sk%d" % (ok, blk, blk))
            emit("  ^st%d:" % blk)
            x = op("llvm.extractvalue %%e_acc[%d] : !acc" % v, "x")
            b = op("llvm.fptrunc %s : f32 to bf16" % x, "b")
            p = op("llvm.getelementptr %s[%s] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16"
                   % (cbase, binop("add", rowoff[h], coloff, "i64")), "p")
            emit("    llvm.store %s, %s {alignment = 2 : i64} : bf16, !llvm.ptr<1>" % (b, p))
            emit("    llvm.br ^sk%d" % blk)
            emit("  ^sk%d:" % blk)
            blk += 1
emit("    llvm.br ^exit")
emit("")
emit("  ^exit:")
emit("    llvm.return")
emit("  }")
emit("}")
emit("}")

# Constants were emitted where first used; hoist them to the top of the entry block so that
# every use is dominated.
body = "\n".join(out) + "\n"
lines = body.split("\n")
const_lines = [l for l in lines if "= llvm.mlir.constant(" in l]
rest = [l for l in lines if "= llvm.mlir.constant(" not in l]
idx = next(i for i, l in enumerate(rest) if "// ---- entry:" in l)
rest[idx + 1:idx + 1] = const_lines
text = "\n".join(rest)
if args.output:
    open(args.output, "w").write(text)
else:
    print(text, end="")
