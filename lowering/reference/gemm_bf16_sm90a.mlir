// Reference bf16 GEMM for sm_90a: C[M,N] = A[M,K] * B[K,N], all row-major.
// The Rust lowering reproduces this module op by op (see README.md beside this file). The
// mechanical parts (128-wide accumulator struct, tied-operand lists, unrolled epilogue) were
// written out by a small generator script; the structure and every comment are the reference.
//
// CTA tile 128x256x64, 384 threads: warpgroup 0 = TMA producer (one thread issues),
// warpgroups 1 and 2 = wgmma consumers, each owning 64x256 of the f32 accumulator.
// 4-stage ring in dynamic shared memory (A stage 16 KiB, B stage 32 KiB, 128B swizzle),
// full/empty mbarriers per stage. Dynamic shared memory: 197632 bytes:
//   [0, 1024)            mbarriers: full[s] at 8*s, empty[s] at 32 + 8*s (s < 4)
//   [1024, 66560)      A stages, 16 KiB each: 128 rows (M) x 128 B (64 K elements), SW128
//   [66560, 197632)   B stages, 32 KiB each: 4 TMA boxes of 64 rows (K) x 128 B (64 N elements), SW128

// Accumulator ordering: nvvm.wgmma.mma_async returns the accumulator struct, but
// nvvm.wgmma.wait.group.sync.aligned takes no operands, so LLVM may schedule pure uses of the
// accumulator (extractvalue, cvt, phi copies) above the wait. Every wait_group here is therefore
// an llvm.inline_asm "wgmma.wait_group.sync.aligned N;" that takes the 128 accumulator values
// as tied operands ("=f" x 128, then "0".."127") and returns them: every later use depends
// on the wait's result, and the tied constraints keep the registers identical (no moves).
// The accumulator is zeroed by scale-d = 0 on the first mma of the peeled k-tile 0, not by
// register moves, so nothing but wgmma defines accumulator registers inside a fence..commit window.

// The accumulator of one consumer warpgroup: m64n256 f32 = 128 registers per thread.
!acc = !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>

module attributes {gpu.container_module} {
gpu.module @gemm_bf16_module {
  // Dynamic shared memory: a zero-sized extern .shared array, 1024-aligned (SW128 atoms
  // are 1024 B and the wgmma descriptors assume base_offset = 0).
  llvm.mlir.global external @dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>

  // Kernel ABI (docs/manifest.md): A, B tensor maps (128 B, by value, __grid_constant__),
  // C as pointer + 2 sizes + 2 strides (u64, elements), then the scalars M, N, K (i64).
  // A tensor map param is `!llvm.ptr` with llvm.byval = !llvm.array<128 x i8>, llvm.align = 64
  // and nvvm.grid_constant: NVPTX prints `.param .align 64 .b8 NAME[128]` and the op gets the
  // param's generic address (cvta.param), which cp.async.bulk.tensor accepts.
  llvm.func @gemm_bf16(%tmap_a: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %tmap_b: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
      %c_ptr: i64, %c_size0: i64, %c_size1: i64, %c_stride0: i64, %c_stride1: i64,
      %M: i64, %N: i64, %K: i64)
      attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32} {
    // nvvm.maxntid + nvvm.minctasm = 1 give ptxas a register cap at entry (65536/384 -> 168),
    // which setmaxnreg needs to take effect.

    // ---- entry: ids, tile origin, k-tile count, shared-memory addresses ----
    %c128_i32 = llvm.mlir.constant(128 : i32) : i32
    %c31_i32 = llvm.mlir.constant(31 : i32) : i32
    %c16_i32 = llvm.mlir.constant(16 : i32) : i32
    %c256_i32 = llvm.mlir.constant(256 : i32) : i32
    %c63_i32 = llvm.mlir.constant(63 : i32) : i32
    %c64_i32 = llvm.mlir.constant(64 : i32) : i32
    %c1_i32 = llvm.mlir.constant(1 : i32) : i32
    %c0_i32 = llvm.mlir.constant(0 : i32) : i32
    %c32_i32 = llvm.mlir.constant(32 : i32) : i32
    %c8_i32 = llvm.mlir.constant(8 : i32) : i32
    %c40_i32 = llvm.mlir.constant(40 : i32) : i32
    %c48_i32 = llvm.mlir.constant(48 : i32) : i32
    %c24_i32 = llvm.mlir.constant(24 : i32) : i32
    %c56_i32 = llvm.mlir.constant(56 : i32) : i32
    %c3_i32 = llvm.mlir.constant(3 : i32) : i32
    %c2_i32 = llvm.mlir.constant(2 : i32) : i32
    %c10000000_i32 = llvm.mlir.constant(10000000 : i32) : i32
    %c49152_i32 = llvm.mlir.constant(49152 : i32) : i32
    %c16384_i32 = llvm.mlir.constant(16384 : i32) : i32
    %c1024_i32 = llvm.mlir.constant(1024 : i32) : i32
    %c32768_i32 = llvm.mlir.constant(32768 : i32) : i32
    %c66560_i32 = llvm.mlir.constant(66560 : i32) : i32
    %c8192_i32 = llvm.mlir.constant(8192 : i32) : i32
    %c24576_i32 = llvm.mlir.constant(24576 : i32) : i32
    %c192_i32 = llvm.mlir.constant(192 : i32) : i32
    %c4_i32 = llvm.mlir.constant(4 : i32) : i32
    %c4611686293305360384_i64 = llvm.mlir.constant(4611686293305360384 : i64) : i64
    %c4611686293338849280_i64 = llvm.mlir.constant(4611686293338849280 : i64) : i64
    %c5_i32 = llvm.mlir.constant(5 : i32) : i32
    %c2048_i32 = llvm.mlir.constant(2048 : i32) : i32
    %c2_i64 = llvm.mlir.constant(2 : i64) : i64
    %c128_i64 = llvm.mlir.constant(128 : i64) : i64
    %c4_i64 = llvm.mlir.constant(4 : i64) : i64
    %c256_i64 = llvm.mlir.constant(256 : i64) : i64
    %c6_i64 = llvm.mlir.constant(6 : i64) : i64
    %c384_i64 = llvm.mlir.constant(384 : i64) : i64
    %c1_i64 = llvm.mlir.constant(1 : i64) : i64
    %c0_i64 = llvm.mlir.constant(0 : i64) : i64
    %c3_i64 = llvm.mlir.constant(3 : i64) : i64
    %c8_i64 = llvm.mlir.constant(8 : i64) : i64
    %c9_i64 = llvm.mlir.constant(9 : i64) : i64
    %c16_i64 = llvm.mlir.constant(16 : i64) : i64
    %c17_i64 = llvm.mlir.constant(17 : i64) : i64
    %c24_i64 = llvm.mlir.constant(24 : i64) : i64
    %c25_i64 = llvm.mlir.constant(25 : i64) : i64
    %c32_i64 = llvm.mlir.constant(32 : i64) : i64
    %c33_i64 = llvm.mlir.constant(33 : i64) : i64
    %c40_i64 = llvm.mlir.constant(40 : i64) : i64
    %c41_i64 = llvm.mlir.constant(41 : i64) : i64
    %c48_i64 = llvm.mlir.constant(48 : i64) : i64
    %c49_i64 = llvm.mlir.constant(49 : i64) : i64
    %c56_i64 = llvm.mlir.constant(56 : i64) : i64
    %c57_i64 = llvm.mlir.constant(57 : i64) : i64
    %c64_i64 = llvm.mlir.constant(64 : i64) : i64
    %c65_i64 = llvm.mlir.constant(65 : i64) : i64
    %c72_i64 = llvm.mlir.constant(72 : i64) : i64
    %c73_i64 = llvm.mlir.constant(73 : i64) : i64
    %c80_i64 = llvm.mlir.constant(80 : i64) : i64
    %c81_i64 = llvm.mlir.constant(81 : i64) : i64
    %c88_i64 = llvm.mlir.constant(88 : i64) : i64
    %c89_i64 = llvm.mlir.constant(89 : i64) : i64
    %c96_i64 = llvm.mlir.constant(96 : i64) : i64
    %c97_i64 = llvm.mlir.constant(97 : i64) : i64
    %c104_i64 = llvm.mlir.constant(104 : i64) : i64
    %c105_i64 = llvm.mlir.constant(105 : i64) : i64
    %c112_i64 = llvm.mlir.constant(112 : i64) : i64
    %c113_i64 = llvm.mlir.constant(113 : i64) : i64
    %c120_i64 = llvm.mlir.constant(120 : i64) : i64
    %c121_i64 = llvm.mlir.constant(121 : i64) : i64
    %c129_i64 = llvm.mlir.constant(129 : i64) : i64
    %c136_i64 = llvm.mlir.constant(136 : i64) : i64
    %c137_i64 = llvm.mlir.constant(137 : i64) : i64
    %c144_i64 = llvm.mlir.constant(144 : i64) : i64
    %c145_i64 = llvm.mlir.constant(145 : i64) : i64
    %c152_i64 = llvm.mlir.constant(152 : i64) : i64
    %c153_i64 = llvm.mlir.constant(153 : i64) : i64
    %c160_i64 = llvm.mlir.constant(160 : i64) : i64
    %c161_i64 = llvm.mlir.constant(161 : i64) : i64
    %c168_i64 = llvm.mlir.constant(168 : i64) : i64
    %c169_i64 = llvm.mlir.constant(169 : i64) : i64
    %c176_i64 = llvm.mlir.constant(176 : i64) : i64
    %c177_i64 = llvm.mlir.constant(177 : i64) : i64
    %c184_i64 = llvm.mlir.constant(184 : i64) : i64
    %c185_i64 = llvm.mlir.constant(185 : i64) : i64
    %c192_i64 = llvm.mlir.constant(192 : i64) : i64
    %c193_i64 = llvm.mlir.constant(193 : i64) : i64
    %c200_i64 = llvm.mlir.constant(200 : i64) : i64
    %c201_i64 = llvm.mlir.constant(201 : i64) : i64
    %c208_i64 = llvm.mlir.constant(208 : i64) : i64
    %c209_i64 = llvm.mlir.constant(209 : i64) : i64
    %c216_i64 = llvm.mlir.constant(216 : i64) : i64
    %c217_i64 = llvm.mlir.constant(217 : i64) : i64
    %c224_i64 = llvm.mlir.constant(224 : i64) : i64
    %c225_i64 = llvm.mlir.constant(225 : i64) : i64
    %c232_i64 = llvm.mlir.constant(232 : i64) : i64
    %c233_i64 = llvm.mlir.constant(233 : i64) : i64
    %c240_i64 = llvm.mlir.constant(240 : i64) : i64
    %c241_i64 = llvm.mlir.constant(241 : i64) : i64
    %c248_i64 = llvm.mlir.constant(248 : i64) : i64
    %c249_i64 = llvm.mlir.constant(249 : i64) : i64
    %tid_1 = nvvm.read.ptx.sreg.tid.x : i32
    %ctaid_x_2 = nvvm.read.ptx.sreg.ctaid.x : i32
    %ctaid_y_3 = nvvm.read.ptx.sreg.ctaid.y : i32
    %wg_4 = llvm.udiv %tid_1, %c128_i32 : i32
    %lane_5 = llvm.and %tid_1, %c31_i32 : i32
    // Grouped rasterization for L2 reuse: the launch grid stays (ceildiv(N,256), ceildiv(M,128));
    // the linear CTA id is remapped so that consecutive CTAs sweep 16 M-tiles before moving
    // along N (a wave then shares A rows and B columns in L2).
    %grid_n_6 = nvvm.read.ptx.sreg.nctaid.x : i32
    %grid_m_7 = nvvm.read.ptx.sreg.nctaid.y : i32
    %v_8 = llvm.mul %ctaid_y_3, %grid_n_6 : i32
    %pid_9 = llvm.add %v_8, %ctaid_x_2 : i32
    %per_group_10 = llvm.mul %grid_n_6, %c16_i32 : i32
    %group_11 = llvm.udiv %pid_9, %per_group_10 : i32
    %first_m_12 = llvm.mul %group_11, %c16_i32 : i32
    %v_13 = llvm.sub %grid_m_7, %first_m_12 : i32
    %group_rows_14 = llvm.intr.umin(%v_13, %c16_i32) : (i32, i32) -> i32
    %v_15 = llvm.mul %group_11, %per_group_10 : i32
    %in_group_16 = llvm.sub %pid_9, %v_15 : i32
    %v_17 = llvm.urem %in_group_16, %group_rows_14 : i32
    %tile_m_18 = llvm.add %first_m_12, %v_17 : i32
    %tile_n_19 = llvm.udiv %in_group_16, %group_rows_14 : i32
    %n0_20 = llvm.mul %tile_n_19, %c256_i32 : i32
    %m0_21 = llvm.mul %tile_m_18, %c128_i32 : i32
    %k32_22 = llvm.trunc %K : i64 to i32
    %v_23 = llvm.add %k32_22, %c63_i32 : i32
    %ceil_k_24 = llvm.udiv %v_23, %c64_i32 : i32
    // num_k = max(ceildiv(K, 64), 1): a tensor map cannot encode K = 0, so K >= 1 in practice;
    // the max keeps the peeled first k-tile (scale-d = 0) unconditional.
    %num_k_25 = llvm.intr.umax(%ceil_k_24, %c1_i32) : (i32, i32) -> i32
    %smem_26 = llvm.mlir.addressof @dynamic_smem : !llvm.ptr<3>
    %smem_addr_27 = llvm.ptrtoint %smem_26 : !llvm.ptr<3> to i32
    // Barrier and stage addresses are computed from the stage index at use; no arrays.
    %p_28 = llvm.icmp "eq" %tid_1, %c0_i32 : i32
    llvm.cond_br %p_28, ^init, ^after_init

  ^init:  // ---- [mbarrier.init] thread 0 ----
    // full[s]: 1 arrival (the producer's arrive.expect_tx) + 49152 transaction bytes per phase.
    // empty[s]: 8 arrivals (lane 0 of each consumer warp, after its wgmma reading s completed).
    %full_29 = llvm.getelementptr %smem_26[%c0_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.init %full_29, %c1_i32 : !llvm.ptr<3>, i32
    %empty_30 = llvm.getelementptr %smem_26[%c32_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.init %empty_30, %c8_i32 : !llvm.ptr<3>, i32
    %full_31 = llvm.getelementptr %smem_26[%c8_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.init %full_31, %c1_i32 : !llvm.ptr<3>, i32
    %empty_32 = llvm.getelementptr %smem_26[%c40_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.init %empty_32, %c8_i32 : !llvm.ptr<3>, i32
    %full_33 = llvm.getelementptr %smem_26[%c16_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.init %full_33, %c1_i32 : !llvm.ptr<3>, i32
    %empty_34 = llvm.getelementptr %smem_26[%c48_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.init %empty_34, %c8_i32 : !llvm.ptr<3>, i32
    %full_35 = llvm.getelementptr %smem_26[%c24_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.init %full_35, %c1_i32 : !llvm.ptr<3>, i32
    %empty_36 = llvm.getelementptr %smem_26[%c56_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.init %empty_36, %c8_i32 : !llvm.ptr<3>, i32
    // Make the inits visible to the async proxy (TMA complete_tx) and the other threads.
    nvvm.fence.mbarrier.init
    llvm.br ^after_init

  ^after_init:
    nvvm.barrier0
    %is_producer_37 = llvm.icmp "eq" %wg_4, %c0_i32 : i32
    llvm.cond_br %is_producer_37, ^producer, ^consumer

  ^producer:  // ---- warpgroup 0: TMA producer ----
    // Give registers back to the consumers (all 128 threads of the warpgroup execute it).
    nvvm.setmaxregister decrease 40
    %is_elected_38 = llvm.icmp "eq" %tid_1, %c0_i32 : i32
    llvm.cond_br %is_elected_38, ^p_loop(%c0_i32 : i32), ^exit

  ^p_loop(%p_kt: i32):
    %p_39 = llvm.icmp "ult" %p_kt, %num_k_25 : i32
    llvm.cond_br %p_39, ^p_body, ^exit

  ^p_body:
    %p_stage_40 = llvm.and %p_kt, %c3_i32 : i32
    %p_round_41 = llvm.lshr %p_kt, %c2_i32 : i32
    %p_phase_42 = llvm.and %p_round_41, %c1_i32 : i32
    %p_empty_parity_43 = llvm.xor %p_phase_42, %c1_i32 : i32
    // [wait.parity empty[s]] parity (round & 1) ^ 1, so round 0 passes on the fresh barrier.
    %v_44 = llvm.shl %p_stage_40, %c3_i32 : i32
    %v_45 = llvm.add %v_44, %c32_i32 : i32
    %empty_46 = llvm.getelementptr %smem_26[%v_45] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.try_wait.parity %empty_46, %p_empty_parity_43, %c10000000_i32 : !llvm.ptr<3>, i32, i32
    // [expect_tx full[s]] arrive + arm for the bytes of all 5 boxes (OOB zero-fill counts in full).
    %v_47 = llvm.shl %p_stage_40, %c3_i32 : i32
    %full_48 = llvm.getelementptr %smem_26[%v_47] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.arrive.expect_tx %full_48, %c49152_i32 : !llvm.ptr<3>, i32
    %k0_49 = llvm.mul %p_kt, %c64_i32 : i32
    // [tma.issue] Coordinates are innermost first: A (k, m), B (n, k). The destination is the
    // CTA's own shared::cta address cast to shared::cluster (addrspace 7): MLIR 22's op only
    // takes a ptr<7> destination unless isCTAOnly (which needs PTX 8.6).
    %v_50 = llvm.mul %p_stage_40, %c16384_i32 : i32
    %v_51 = llvm.add %v_50, %c1024_i32 : i32
    %a_dst_52 = llvm.getelementptr %smem_26[%v_51] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %a_dst_cl_53 = llvm.addrspacecast %a_dst_52 : !llvm.ptr<3> to !llvm.ptr<7>
    nvvm.cp.async.bulk.tensor.shared.cluster.global %a_dst_cl_53, %tmap_a, %full_48, box[%k0_49, %m0_21] : !llvm.ptr<7>, !llvm.ptr
    %v_54 = llvm.mul %p_stage_40, %c32768_i32 : i32
    %b_off_55 = llvm.add %v_54, %c66560_i32 : i32
    %v_56 = llvm.add %b_off_55, %c0_i32 : i32
    %b_dst_57 = llvm.getelementptr %smem_26[%v_56] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %b_dst_cl_58 = llvm.addrspacecast %b_dst_57 : !llvm.ptr<3> to !llvm.ptr<7>
    %v_59 = llvm.add %n0_20, %c0_i32 : i32
    nvvm.cp.async.bulk.tensor.shared.cluster.global %b_dst_cl_58, %tmap_b, %full_48, box[%v_59, %k0_49] : !llvm.ptr<7>, !llvm.ptr
    %v_60 = llvm.add %b_off_55, %c8192_i32 : i32
    %b_dst_61 = llvm.getelementptr %smem_26[%v_60] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %b_dst_cl_62 = llvm.addrspacecast %b_dst_61 : !llvm.ptr<3> to !llvm.ptr<7>
    %v_63 = llvm.add %n0_20, %c64_i32 : i32
    nvvm.cp.async.bulk.tensor.shared.cluster.global %b_dst_cl_62, %tmap_b, %full_48, box[%v_63, %k0_49] : !llvm.ptr<7>, !llvm.ptr
    %v_64 = llvm.add %b_off_55, %c16384_i32 : i32
    %b_dst_65 = llvm.getelementptr %smem_26[%v_64] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %b_dst_cl_66 = llvm.addrspacecast %b_dst_65 : !llvm.ptr<3> to !llvm.ptr<7>
    %v_67 = llvm.add %n0_20, %c128_i32 : i32
    nvvm.cp.async.bulk.tensor.shared.cluster.global %b_dst_cl_66, %tmap_b, %full_48, box[%v_67, %k0_49] : !llvm.ptr<7>, !llvm.ptr
    %v_68 = llvm.add %b_off_55, %c24576_i32 : i32
    %b_dst_69 = llvm.getelementptr %smem_26[%v_68] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    %b_dst_cl_70 = llvm.addrspacecast %b_dst_69 : !llvm.ptr<3> to !llvm.ptr<7>
    %v_71 = llvm.add %n0_20, %c192_i32 : i32
    nvvm.cp.async.bulk.tensor.shared.cluster.global %b_dst_cl_70, %tmap_b, %full_48, box[%v_71, %k0_49] : !llvm.ptr<7>, !llvm.ptr
    %v_72 = llvm.add %p_kt, %c1_i32 : i32
    llvm.br ^p_loop(%v_72 : i32)

  ^consumer:  // ---- warpgroups 1, 2: wgmma consumers ----
    nvvm.setmaxregister increase 232
    %cwg_73 = llvm.sub %wg_4, %c1_i32 : i32
    // wgmma smem descriptors: desc = layout(1 = SW128)<<62 | (SBO>>4)<<32 | (LBO>>4)<<16 | addr>>4.
    //   A (K-major, SW128): SBO = 1024 (8 rows x 128 B), LBO = 16 (unused for swizzled K-major).
    //   B (N-major = transposed, SW128): LBO = 8192 (next 64-wide N chunk = next TMA box),
    //     SBO = 1024 (next 8 K rows). Start addresses advance per stage and per k16 step:
    //     A by 32 B inside the 128 B swizzled row, B by 16 rows x 128 B = 2048 B.
    //   The 14-bit address field is added to directly (addresses < 256 KiB, no carry).
    %v_74 = llvm.mul %cwg_73, %c8192_i32 : i32
    %a_wg_off_75 = llvm.add %v_74, %c1024_i32 : i32
    %v_76 = llvm.add %smem_addr_27, %a_wg_off_75 : i32
    %v_77 = llvm.add %smem_addr_27, %c66560_i32 : i32
    %v_78 = llvm.lshr %v_76, %c4_i32 : i32
    %v_79 = llvm.zext %v_78 : i32 to i64
    %v_80 = llvm.lshr %v_77, %c4_i32 : i32
    %v_81 = llvm.zext %v_80 : i32 to i64
    %descA0_82 = llvm.or %v_79, %c4611686293305360384_i64 : i64
    %descB0_83 = llvm.or %v_81, %c4611686293338849280_i64 : i64
    %v_84 = llvm.lshr %tid_1, %c5_i32 : i32
    %warp_85 = llvm.and %v_84, %c3_i32 : i32
    %is_lane0_86 = llvm.icmp "eq" %lane_5, %c0_i32 : i32
    llvm.br ^c_first

  ^c_first:  // ---- k-tile 0, peeled so the first mma can use scale-d = 0 ----
    %c_stage_87 = llvm.and %c0_i32, %c3_i32 : i32
    %v_88 = llvm.lshr %c0_i32, %c2_i32 : i32
    %c_phase_89 = llvm.and %v_88, %c1_i32 : i32
    // [wait.parity full[s]] parity (round & 1): the TMA bytes of this stage have landed.
    %v_90 = llvm.shl %c_stage_87, %c3_i32 : i32
    %full_91 = llvm.getelementptr %smem_26[%v_90] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.try_wait.parity %full_91, %c_phase_89, %c10000000_i32 : !llvm.ptr<3>, i32, i32
    %v_92 = llvm.mul %c_stage_87, %c1024_i32 : i32
    %v_93 = llvm.zext %v_92 : i32 to i64
    %dA_94 = llvm.add %descA0_82, %v_93 : i64
    %v_95 = llvm.mul %c_stage_87, %c2048_i32 : i32
    %v_96 = llvm.zext %v_95 : i32 to i64
    %dB_97 = llvm.add %descB0_83, %v_96 : i64
    // [wgmma.fence] orders earlier accesses to the accumulator registers before the mma chain
    // (required before the first wgmma of the warpgroup and after any register write to it).
    nvvm.wgmma.fence.aligned
    // [mma_async chain] 4 x m64n256k16 over the 64-wide k-tile; A K-major, B transposed (layout row).
    // first mma of the tile: scale-d = 0 zeroes the accumulator (no register moves).
    %acc_undef_98 = llvm.mlir.undef : !acc
    %acc_99 = nvvm.wgmma.mma_async %dA_94, %dB_97, %acc_undef_98, <m = 64, n = 256, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !acc -> !acc
    %dA_100 = llvm.add %dA_94, %c2_i64 : i64
    %dB_101 = llvm.add %dB_97, %c128_i64 : i64
    %acc_102 = nvvm.wgmma.mma_async %dA_100, %dB_101, %acc_99, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !acc -> !acc
    %dA_103 = llvm.add %dA_94, %c4_i64 : i64
    %dB_104 = llvm.add %dB_97, %c256_i64 : i64
    %acc_105 = nvvm.wgmma.mma_async %dA_103, %dB_104, %acc_102, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !acc -> !acc
    %dA_106 = llvm.add %dA_94, %c6_i64 : i64
    %dB_107 = llvm.add %dB_97, %c384_i64 : i64
    %acc_108 = nvvm.wgmma.mma_async %dA_106, %dB_107, %acc_105, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !acc -> !acc
    // [commit_group] the 4 mmas of this k-tile form one wgmma group.
    nvvm.wgmma.commit.group.sync.aligned
    // [wait_group 1] keep this group in flight. Accumulator threaded through (tied operands).
    %a_109 = llvm.extractvalue %acc_108[0] : !acc
    %a_110 = llvm.extractvalue %acc_108[1] : !acc
    %a_111 = llvm.extractvalue %acc_108[2] : !acc
    %a_112 = llvm.extractvalue %acc_108[3] : !acc
    %a_113 = llvm.extractvalue %acc_108[4] : !acc
    %a_114 = llvm.extractvalue %acc_108[5] : !acc
    %a_115 = llvm.extractvalue %acc_108[6] : !acc
    %a_116 = llvm.extractvalue %acc_108[7] : !acc
    %a_117 = llvm.extractvalue %acc_108[8] : !acc
    %a_118 = llvm.extractvalue %acc_108[9] : !acc
    %a_119 = llvm.extractvalue %acc_108[10] : !acc
    %a_120 = llvm.extractvalue %acc_108[11] : !acc
    %a_121 = llvm.extractvalue %acc_108[12] : !acc
    %a_122 = llvm.extractvalue %acc_108[13] : !acc
    %a_123 = llvm.extractvalue %acc_108[14] : !acc
    %a_124 = llvm.extractvalue %acc_108[15] : !acc
    %a_125 = llvm.extractvalue %acc_108[16] : !acc
    %a_126 = llvm.extractvalue %acc_108[17] : !acc
    %a_127 = llvm.extractvalue %acc_108[18] : !acc
    %a_128 = llvm.extractvalue %acc_108[19] : !acc
    %a_129 = llvm.extractvalue %acc_108[20] : !acc
    %a_130 = llvm.extractvalue %acc_108[21] : !acc
    %a_131 = llvm.extractvalue %acc_108[22] : !acc
    %a_132 = llvm.extractvalue %acc_108[23] : !acc
    %a_133 = llvm.extractvalue %acc_108[24] : !acc
    %a_134 = llvm.extractvalue %acc_108[25] : !acc
    %a_135 = llvm.extractvalue %acc_108[26] : !acc
    %a_136 = llvm.extractvalue %acc_108[27] : !acc
    %a_137 = llvm.extractvalue %acc_108[28] : !acc
    %a_138 = llvm.extractvalue %acc_108[29] : !acc
    %a_139 = llvm.extractvalue %acc_108[30] : !acc
    %a_140 = llvm.extractvalue %acc_108[31] : !acc
    %a_141 = llvm.extractvalue %acc_108[32] : !acc
    %a_142 = llvm.extractvalue %acc_108[33] : !acc
    %a_143 = llvm.extractvalue %acc_108[34] : !acc
    %a_144 = llvm.extractvalue %acc_108[35] : !acc
    %a_145 = llvm.extractvalue %acc_108[36] : !acc
    %a_146 = llvm.extractvalue %acc_108[37] : !acc
    %a_147 = llvm.extractvalue %acc_108[38] : !acc
    %a_148 = llvm.extractvalue %acc_108[39] : !acc
    %a_149 = llvm.extractvalue %acc_108[40] : !acc
    %a_150 = llvm.extractvalue %acc_108[41] : !acc
    %a_151 = llvm.extractvalue %acc_108[42] : !acc
    %a_152 = llvm.extractvalue %acc_108[43] : !acc
    %a_153 = llvm.extractvalue %acc_108[44] : !acc
    %a_154 = llvm.extractvalue %acc_108[45] : !acc
    %a_155 = llvm.extractvalue %acc_108[46] : !acc
    %a_156 = llvm.extractvalue %acc_108[47] : !acc
    %a_157 = llvm.extractvalue %acc_108[48] : !acc
    %a_158 = llvm.extractvalue %acc_108[49] : !acc
    %a_159 = llvm.extractvalue %acc_108[50] : !acc
    %a_160 = llvm.extractvalue %acc_108[51] : !acc
    %a_161 = llvm.extractvalue %acc_108[52] : !acc
    %a_162 = llvm.extractvalue %acc_108[53] : !acc
    %a_163 = llvm.extractvalue %acc_108[54] : !acc
    %a_164 = llvm.extractvalue %acc_108[55] : !acc
    %a_165 = llvm.extractvalue %acc_108[56] : !acc
    %a_166 = llvm.extractvalue %acc_108[57] : !acc
    %a_167 = llvm.extractvalue %acc_108[58] : !acc
    %a_168 = llvm.extractvalue %acc_108[59] : !acc
    %a_169 = llvm.extractvalue %acc_108[60] : !acc
    %a_170 = llvm.extractvalue %acc_108[61] : !acc
    %a_171 = llvm.extractvalue %acc_108[62] : !acc
    %a_172 = llvm.extractvalue %acc_108[63] : !acc
    %a_173 = llvm.extractvalue %acc_108[64] : !acc
    %a_174 = llvm.extractvalue %acc_108[65] : !acc
    %a_175 = llvm.extractvalue %acc_108[66] : !acc
    %a_176 = llvm.extractvalue %acc_108[67] : !acc
    %a_177 = llvm.extractvalue %acc_108[68] : !acc
    %a_178 = llvm.extractvalue %acc_108[69] : !acc
    %a_179 = llvm.extractvalue %acc_108[70] : !acc
    %a_180 = llvm.extractvalue %acc_108[71] : !acc
    %a_181 = llvm.extractvalue %acc_108[72] : !acc
    %a_182 = llvm.extractvalue %acc_108[73] : !acc
    %a_183 = llvm.extractvalue %acc_108[74] : !acc
    %a_184 = llvm.extractvalue %acc_108[75] : !acc
    %a_185 = llvm.extractvalue %acc_108[76] : !acc
    %a_186 = llvm.extractvalue %acc_108[77] : !acc
    %a_187 = llvm.extractvalue %acc_108[78] : !acc
    %a_188 = llvm.extractvalue %acc_108[79] : !acc
    %a_189 = llvm.extractvalue %acc_108[80] : !acc
    %a_190 = llvm.extractvalue %acc_108[81] : !acc
    %a_191 = llvm.extractvalue %acc_108[82] : !acc
    %a_192 = llvm.extractvalue %acc_108[83] : !acc
    %a_193 = llvm.extractvalue %acc_108[84] : !acc
    %a_194 = llvm.extractvalue %acc_108[85] : !acc
    %a_195 = llvm.extractvalue %acc_108[86] : !acc
    %a_196 = llvm.extractvalue %acc_108[87] : !acc
    %a_197 = llvm.extractvalue %acc_108[88] : !acc
    %a_198 = llvm.extractvalue %acc_108[89] : !acc
    %a_199 = llvm.extractvalue %acc_108[90] : !acc
    %a_200 = llvm.extractvalue %acc_108[91] : !acc
    %a_201 = llvm.extractvalue %acc_108[92] : !acc
    %a_202 = llvm.extractvalue %acc_108[93] : !acc
    %a_203 = llvm.extractvalue %acc_108[94] : !acc
    %a_204 = llvm.extractvalue %acc_108[95] : !acc
    %a_205 = llvm.extractvalue %acc_108[96] : !acc
    %a_206 = llvm.extractvalue %acc_108[97] : !acc
    %a_207 = llvm.extractvalue %acc_108[98] : !acc
    %a_208 = llvm.extractvalue %acc_108[99] : !acc
    %a_209 = llvm.extractvalue %acc_108[100] : !acc
    %a_210 = llvm.extractvalue %acc_108[101] : !acc
    %a_211 = llvm.extractvalue %acc_108[102] : !acc
    %a_212 = llvm.extractvalue %acc_108[103] : !acc
    %a_213 = llvm.extractvalue %acc_108[104] : !acc
    %a_214 = llvm.extractvalue %acc_108[105] : !acc
    %a_215 = llvm.extractvalue %acc_108[106] : !acc
    %a_216 = llvm.extractvalue %acc_108[107] : !acc
    %a_217 = llvm.extractvalue %acc_108[108] : !acc
    %a_218 = llvm.extractvalue %acc_108[109] : !acc
    %a_219 = llvm.extractvalue %acc_108[110] : !acc
    %a_220 = llvm.extractvalue %acc_108[111] : !acc
    %a_221 = llvm.extractvalue %acc_108[112] : !acc
    %a_222 = llvm.extractvalue %acc_108[113] : !acc
    %a_223 = llvm.extractvalue %acc_108[114] : !acc
    %a_224 = llvm.extractvalue %acc_108[115] : !acc
    %a_225 = llvm.extractvalue %acc_108[116] : !acc
    %a_226 = llvm.extractvalue %acc_108[117] : !acc
    %a_227 = llvm.extractvalue %acc_108[118] : !acc
    %a_228 = llvm.extractvalue %acc_108[119] : !acc
    %a_229 = llvm.extractvalue %acc_108[120] : !acc
    %a_230 = llvm.extractvalue %acc_108[121] : !acc
    %a_231 = llvm.extractvalue %acc_108[122] : !acc
    %a_232 = llvm.extractvalue %acc_108[123] : !acc
    %a_233 = llvm.extractvalue %acc_108[124] : !acc
    %a_234 = llvm.extractvalue %acc_108[125] : !acc
    %a_235 = llvm.extractvalue %acc_108[126] : !acc
    %a_236 = llvm.extractvalue %acc_108[127] : !acc
    %acc_237 = llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 1;", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127" %a_109, %a_110, %a_111, %a_112, %a_113, %a_114, %a_115, %a_116, %a_117, %a_118, %a_119, %a_120, %a_121, %a_122, %a_123, %a_124, %a_125, %a_126, %a_127, %a_128, %a_129, %a_130, %a_131, %a_132, %a_133, %a_134, %a_135, %a_136, %a_137, %a_138, %a_139, %a_140, %a_141, %a_142, %a_143, %a_144, %a_145, %a_146, %a_147, %a_148, %a_149, %a_150, %a_151, %a_152, %a_153, %a_154, %a_155, %a_156, %a_157, %a_158, %a_159, %a_160, %a_161, %a_162, %a_163, %a_164, %a_165, %a_166, %a_167, %a_168, %a_169, %a_170, %a_171, %a_172, %a_173, %a_174, %a_175, %a_176, %a_177, %a_178, %a_179, %a_180, %a_181, %a_182, %a_183, %a_184, %a_185, %a_186, %a_187, %a_188, %a_189, %a_190, %a_191, %a_192, %a_193, %a_194, %a_195, %a_196, %a_197, %a_198, %a_199, %a_200, %a_201, %a_202, %a_203, %a_204, %a_205, %a_206, %a_207, %a_208, %a_209, %a_210, %a_211, %a_212, %a_213, %a_214, %a_215, %a_216, %a_217, %a_218, %a_219, %a_220, %a_221, %a_222, %a_223, %a_224, %a_225, %a_226, %a_227, %a_228, %a_229, %a_230, %a_231, %a_232, %a_233, %a_234, %a_235, %a_236 : (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) -> !acc
    llvm.br ^c_loop(%c1_i32, %acc_237 : i32, !acc)

  ^c_loop(%c_kt: i32, %c_acc: !acc):
    %p_238 = llvm.icmp "ult" %c_kt, %num_k_25 : i32
    llvm.cond_br %p_238, ^c_body, ^c_drain

  ^c_body:  // ---- steady state: k-tile kt ----
    %c_stage_239 = llvm.and %c_kt, %c3_i32 : i32
    %v_240 = llvm.lshr %c_kt, %c2_i32 : i32
    %c_phase_241 = llvm.and %v_240, %c1_i32 : i32
    // [wait.parity full[s]] parity (round & 1): the TMA bytes of this stage have landed.
    %v_242 = llvm.shl %c_stage_239, %c3_i32 : i32
    %full_243 = llvm.getelementptr %smem_26[%v_242] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.try_wait.parity %full_243, %c_phase_241, %c10000000_i32 : !llvm.ptr<3>, i32, i32
    %v_244 = llvm.mul %c_stage_239, %c1024_i32 : i32
    %v_245 = llvm.zext %v_244 : i32 to i64
    %dA_246 = llvm.add %descA0_82, %v_245 : i64
    %v_247 = llvm.mul %c_stage_239, %c2048_i32 : i32
    %v_248 = llvm.zext %v_247 : i32 to i64
    %dB_249 = llvm.add %descB0_83, %v_248 : i64
    // [wgmma.fence] orders earlier accesses to the accumulator registers before the mma chain
    // (required before the first wgmma of the warpgroup and after any register write to it).
    nvvm.wgmma.fence.aligned
    // [mma_async chain] 4 x m64n256k16 over the 64-wide k-tile; A K-major, B transposed (layout row).
    %acc_250 = nvvm.wgmma.mma_async %dA_246, %dB_249, %c_acc, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !acc -> !acc
    %dA_251 = llvm.add %dA_246, %c2_i64 : i64
    %dB_252 = llvm.add %dB_249, %c128_i64 : i64
    %acc_253 = nvvm.wgmma.mma_async %dA_251, %dB_252, %acc_250, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !acc -> !acc
    %dA_254 = llvm.add %dA_246, %c4_i64 : i64
    %dB_255 = llvm.add %dB_249, %c256_i64 : i64
    %acc_256 = nvvm.wgmma.mma_async %dA_254, %dB_255, %acc_253, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !acc -> !acc
    %dA_257 = llvm.add %dA_246, %c6_i64 : i64
    %dB_258 = llvm.add %dB_249, %c384_i64 : i64
    %acc_259 = nvvm.wgmma.mma_async %dA_257, %dB_258, %acc_256, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>] : !acc -> !acc
    // [commit_group] the 4 mmas of this k-tile form one wgmma group.
    nvvm.wgmma.commit.group.sync.aligned
    // [wait_group 1] group kt stays in flight; group kt-1 (which read stage (kt-1)%4) is done.
    // The accumulator goes through the wait as tied "=f"/"N" operands, so no use of it can
    // be scheduled above the wait (the nvvm.wgmma.wait.group.sync.aligned op takes no operands).
    %a_260 = llvm.extractvalue %acc_259[0] : !acc
    %a_261 = llvm.extractvalue %acc_259[1] : !acc
    %a_262 = llvm.extractvalue %acc_259[2] : !acc
    %a_263 = llvm.extractvalue %acc_259[3] : !acc
    %a_264 = llvm.extractvalue %acc_259[4] : !acc
    %a_265 = llvm.extractvalue %acc_259[5] : !acc
    %a_266 = llvm.extractvalue %acc_259[6] : !acc
    %a_267 = llvm.extractvalue %acc_259[7] : !acc
    %a_268 = llvm.extractvalue %acc_259[8] : !acc
    %a_269 = llvm.extractvalue %acc_259[9] : !acc
    %a_270 = llvm.extractvalue %acc_259[10] : !acc
    %a_271 = llvm.extractvalue %acc_259[11] : !acc
    %a_272 = llvm.extractvalue %acc_259[12] : !acc
    %a_273 = llvm.extractvalue %acc_259[13] : !acc
    %a_274 = llvm.extractvalue %acc_259[14] : !acc
    %a_275 = llvm.extractvalue %acc_259[15] : !acc
    %a_276 = llvm.extractvalue %acc_259[16] : !acc
    %a_277 = llvm.extractvalue %acc_259[17] : !acc
    %a_278 = llvm.extractvalue %acc_259[18] : !acc
    %a_279 = llvm.extractvalue %acc_259[19] : !acc
    %a_280 = llvm.extractvalue %acc_259[20] : !acc
    %a_281 = llvm.extractvalue %acc_259[21] : !acc
    %a_282 = llvm.extractvalue %acc_259[22] : !acc
    %a_283 = llvm.extractvalue %acc_259[23] : !acc
    %a_284 = llvm.extractvalue %acc_259[24] : !acc
    %a_285 = llvm.extractvalue %acc_259[25] : !acc
    %a_286 = llvm.extractvalue %acc_259[26] : !acc
    %a_287 = llvm.extractvalue %acc_259[27] : !acc
    %a_288 = llvm.extractvalue %acc_259[28] : !acc
    %a_289 = llvm.extractvalue %acc_259[29] : !acc
    %a_290 = llvm.extractvalue %acc_259[30] : !acc
    %a_291 = llvm.extractvalue %acc_259[31] : !acc
    %a_292 = llvm.extractvalue %acc_259[32] : !acc
    %a_293 = llvm.extractvalue %acc_259[33] : !acc
    %a_294 = llvm.extractvalue %acc_259[34] : !acc
    %a_295 = llvm.extractvalue %acc_259[35] : !acc
    %a_296 = llvm.extractvalue %acc_259[36] : !acc
    %a_297 = llvm.extractvalue %acc_259[37] : !acc
    %a_298 = llvm.extractvalue %acc_259[38] : !acc
    %a_299 = llvm.extractvalue %acc_259[39] : !acc
    %a_300 = llvm.extractvalue %acc_259[40] : !acc
    %a_301 = llvm.extractvalue %acc_259[41] : !acc
    %a_302 = llvm.extractvalue %acc_259[42] : !acc
    %a_303 = llvm.extractvalue %acc_259[43] : !acc
    %a_304 = llvm.extractvalue %acc_259[44] : !acc
    %a_305 = llvm.extractvalue %acc_259[45] : !acc
    %a_306 = llvm.extractvalue %acc_259[46] : !acc
    %a_307 = llvm.extractvalue %acc_259[47] : !acc
    %a_308 = llvm.extractvalue %acc_259[48] : !acc
    %a_309 = llvm.extractvalue %acc_259[49] : !acc
    %a_310 = llvm.extractvalue %acc_259[50] : !acc
    %a_311 = llvm.extractvalue %acc_259[51] : !acc
    %a_312 = llvm.extractvalue %acc_259[52] : !acc
    %a_313 = llvm.extractvalue %acc_259[53] : !acc
    %a_314 = llvm.extractvalue %acc_259[54] : !acc
    %a_315 = llvm.extractvalue %acc_259[55] : !acc
    %a_316 = llvm.extractvalue %acc_259[56] : !acc
    %a_317 = llvm.extractvalue %acc_259[57] : !acc
    %a_318 = llvm.extractvalue %acc_259[58] : !acc
    %a_319 = llvm.extractvalue %acc_259[59] : !acc
    %a_320 = llvm.extractvalue %acc_259[60] : !acc
    %a_321 = llvm.extractvalue %acc_259[61] : !acc
    %a_322 = llvm.extractvalue %acc_259[62] : !acc
    %a_323 = llvm.extractvalue %acc_259[63] : !acc
    %a_324 = llvm.extractvalue %acc_259[64] : !acc
    %a_325 = llvm.extractvalue %acc_259[65] : !acc
    %a_326 = llvm.extractvalue %acc_259[66] : !acc
    %a_327 = llvm.extractvalue %acc_259[67] : !acc
    %a_328 = llvm.extractvalue %acc_259[68] : !acc
    %a_329 = llvm.extractvalue %acc_259[69] : !acc
    %a_330 = llvm.extractvalue %acc_259[70] : !acc
    %a_331 = llvm.extractvalue %acc_259[71] : !acc
    %a_332 = llvm.extractvalue %acc_259[72] : !acc
    %a_333 = llvm.extractvalue %acc_259[73] : !acc
    %a_334 = llvm.extractvalue %acc_259[74] : !acc
    %a_335 = llvm.extractvalue %acc_259[75] : !acc
    %a_336 = llvm.extractvalue %acc_259[76] : !acc
    %a_337 = llvm.extractvalue %acc_259[77] : !acc
    %a_338 = llvm.extractvalue %acc_259[78] : !acc
    %a_339 = llvm.extractvalue %acc_259[79] : !acc
    %a_340 = llvm.extractvalue %acc_259[80] : !acc
    %a_341 = llvm.extractvalue %acc_259[81] : !acc
    %a_342 = llvm.extractvalue %acc_259[82] : !acc
    %a_343 = llvm.extractvalue %acc_259[83] : !acc
    %a_344 = llvm.extractvalue %acc_259[84] : !acc
    %a_345 = llvm.extractvalue %acc_259[85] : !acc
    %a_346 = llvm.extractvalue %acc_259[86] : !acc
    %a_347 = llvm.extractvalue %acc_259[87] : !acc
    %a_348 = llvm.extractvalue %acc_259[88] : !acc
    %a_349 = llvm.extractvalue %acc_259[89] : !acc
    %a_350 = llvm.extractvalue %acc_259[90] : !acc
    %a_351 = llvm.extractvalue %acc_259[91] : !acc
    %a_352 = llvm.extractvalue %acc_259[92] : !acc
    %a_353 = llvm.extractvalue %acc_259[93] : !acc
    %a_354 = llvm.extractvalue %acc_259[94] : !acc
    %a_355 = llvm.extractvalue %acc_259[95] : !acc
    %a_356 = llvm.extractvalue %acc_259[96] : !acc
    %a_357 = llvm.extractvalue %acc_259[97] : !acc
    %a_358 = llvm.extractvalue %acc_259[98] : !acc
    %a_359 = llvm.extractvalue %acc_259[99] : !acc
    %a_360 = llvm.extractvalue %acc_259[100] : !acc
    %a_361 = llvm.extractvalue %acc_259[101] : !acc
    %a_362 = llvm.extractvalue %acc_259[102] : !acc
    %a_363 = llvm.extractvalue %acc_259[103] : !acc
    %a_364 = llvm.extractvalue %acc_259[104] : !acc
    %a_365 = llvm.extractvalue %acc_259[105] : !acc
    %a_366 = llvm.extractvalue %acc_259[106] : !acc
    %a_367 = llvm.extractvalue %acc_259[107] : !acc
    %a_368 = llvm.extractvalue %acc_259[108] : !acc
    %a_369 = llvm.extractvalue %acc_259[109] : !acc
    %a_370 = llvm.extractvalue %acc_259[110] : !acc
    %a_371 = llvm.extractvalue %acc_259[111] : !acc
    %a_372 = llvm.extractvalue %acc_259[112] : !acc
    %a_373 = llvm.extractvalue %acc_259[113] : !acc
    %a_374 = llvm.extractvalue %acc_259[114] : !acc
    %a_375 = llvm.extractvalue %acc_259[115] : !acc
    %a_376 = llvm.extractvalue %acc_259[116] : !acc
    %a_377 = llvm.extractvalue %acc_259[117] : !acc
    %a_378 = llvm.extractvalue %acc_259[118] : !acc
    %a_379 = llvm.extractvalue %acc_259[119] : !acc
    %a_380 = llvm.extractvalue %acc_259[120] : !acc
    %a_381 = llvm.extractvalue %acc_259[121] : !acc
    %a_382 = llvm.extractvalue %acc_259[122] : !acc
    %a_383 = llvm.extractvalue %acc_259[123] : !acc
    %a_384 = llvm.extractvalue %acc_259[124] : !acc
    %a_385 = llvm.extractvalue %acc_259[125] : !acc
    %a_386 = llvm.extractvalue %acc_259[126] : !acc
    %a_387 = llvm.extractvalue %acc_259[127] : !acc
    %acc_388 = llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 1;", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127" %a_260, %a_261, %a_262, %a_263, %a_264, %a_265, %a_266, %a_267, %a_268, %a_269, %a_270, %a_271, %a_272, %a_273, %a_274, %a_275, %a_276, %a_277, %a_278, %a_279, %a_280, %a_281, %a_282, %a_283, %a_284, %a_285, %a_286, %a_287, %a_288, %a_289, %a_290, %a_291, %a_292, %a_293, %a_294, %a_295, %a_296, %a_297, %a_298, %a_299, %a_300, %a_301, %a_302, %a_303, %a_304, %a_305, %a_306, %a_307, %a_308, %a_309, %a_310, %a_311, %a_312, %a_313, %a_314, %a_315, %a_316, %a_317, %a_318, %a_319, %a_320, %a_321, %a_322, %a_323, %a_324, %a_325, %a_326, %a_327, %a_328, %a_329, %a_330, %a_331, %a_332, %a_333, %a_334, %a_335, %a_336, %a_337, %a_338, %a_339, %a_340, %a_341, %a_342, %a_343, %a_344, %a_345, %a_346, %a_347, %a_348, %a_349, %a_350, %a_351, %a_352, %a_353, %a_354, %a_355, %a_356, %a_357, %a_358, %a_359, %a_360, %a_361, %a_362, %a_363, %a_364, %a_365, %a_366, %a_367, %a_368, %a_369, %a_370, %a_371, %a_372, %a_373, %a_374, %a_375, %a_376, %a_377, %a_378, %a_379, %a_380, %a_381, %a_382, %a_383, %a_384, %a_385, %a_386, %a_387 : (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) -> !acc
    llvm.cond_br %is_lane0_86, ^c_release, ^c_latch

  ^c_release:  // [mbarrier.arrive empty] release stage (kt-1)%4 to the producer: one arrive per consumer warp
    %v_389 = llvm.sub %c_kt, %c1_i32 : i32
    %prev_stage_390 = llvm.and %v_389, %c3_i32 : i32
    %v_391 = llvm.shl %prev_stage_390, %c3_i32 : i32
    %v_392 = llvm.add %v_391, %c32_i32 : i32
    %empty_393 = llvm.getelementptr %smem_26[%v_392] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
    nvvm.mbarrier.arrive %empty_393 : !llvm.ptr<3>
    llvm.br ^c_latch

  ^c_latch:
    %v_394 = llvm.add %c_kt, %c1_i32 : i32
    llvm.br ^c_loop(%v_394, %acc_388 : i32, !acc)

  ^c_drain:  // ---- [wait_group 0] before the epilogue reads the accumulator ----
    %a_395 = llvm.extractvalue %c_acc[0] : !acc
    %a_396 = llvm.extractvalue %c_acc[1] : !acc
    %a_397 = llvm.extractvalue %c_acc[2] : !acc
    %a_398 = llvm.extractvalue %c_acc[3] : !acc
    %a_399 = llvm.extractvalue %c_acc[4] : !acc
    %a_400 = llvm.extractvalue %c_acc[5] : !acc
    %a_401 = llvm.extractvalue %c_acc[6] : !acc
    %a_402 = llvm.extractvalue %c_acc[7] : !acc
    %a_403 = llvm.extractvalue %c_acc[8] : !acc
    %a_404 = llvm.extractvalue %c_acc[9] : !acc
    %a_405 = llvm.extractvalue %c_acc[10] : !acc
    %a_406 = llvm.extractvalue %c_acc[11] : !acc
    %a_407 = llvm.extractvalue %c_acc[12] : !acc
    %a_408 = llvm.extractvalue %c_acc[13] : !acc
    %a_409 = llvm.extractvalue %c_acc[14] : !acc
    %a_410 = llvm.extractvalue %c_acc[15] : !acc
    %a_411 = llvm.extractvalue %c_acc[16] : !acc
    %a_412 = llvm.extractvalue %c_acc[17] : !acc
    %a_413 = llvm.extractvalue %c_acc[18] : !acc
    %a_414 = llvm.extractvalue %c_acc[19] : !acc
    %a_415 = llvm.extractvalue %c_acc[20] : !acc
    %a_416 = llvm.extractvalue %c_acc[21] : !acc
    %a_417 = llvm.extractvalue %c_acc[22] : !acc
    %a_418 = llvm.extractvalue %c_acc[23] : !acc
    %a_419 = llvm.extractvalue %c_acc[24] : !acc
    %a_420 = llvm.extractvalue %c_acc[25] : !acc
    %a_421 = llvm.extractvalue %c_acc[26] : !acc
    %a_422 = llvm.extractvalue %c_acc[27] : !acc
    %a_423 = llvm.extractvalue %c_acc[28] : !acc
    %a_424 = llvm.extractvalue %c_acc[29] : !acc
    %a_425 = llvm.extractvalue %c_acc[30] : !acc
    %a_426 = llvm.extractvalue %c_acc[31] : !acc
    %a_427 = llvm.extractvalue %c_acc[32] : !acc
    %a_428 = llvm.extractvalue %c_acc[33] : !acc
    %a_429 = llvm.extractvalue %c_acc[34] : !acc
    %a_430 = llvm.extractvalue %c_acc[35] : !acc
    %a_431 = llvm.extractvalue %c_acc[36] : !acc
    %a_432 = llvm.extractvalue %c_acc[37] : !acc
    %a_433 = llvm.extractvalue %c_acc[38] : !acc
    %a_434 = llvm.extractvalue %c_acc[39] : !acc
    %a_435 = llvm.extractvalue %c_acc[40] : !acc
    %a_436 = llvm.extractvalue %c_acc[41] : !acc
    %a_437 = llvm.extractvalue %c_acc[42] : !acc
    %a_438 = llvm.extractvalue %c_acc[43] : !acc
    %a_439 = llvm.extractvalue %c_acc[44] : !acc
    %a_440 = llvm.extractvalue %c_acc[45] : !acc
    %a_441 = llvm.extractvalue %c_acc[46] : !acc
    %a_442 = llvm.extractvalue %c_acc[47] : !acc
    %a_443 = llvm.extractvalue %c_acc[48] : !acc
    %a_444 = llvm.extractvalue %c_acc[49] : !acc
    %a_445 = llvm.extractvalue %c_acc[50] : !acc
    %a_446 = llvm.extractvalue %c_acc[51] : !acc
    %a_447 = llvm.extractvalue %c_acc[52] : !acc
    %a_448 = llvm.extractvalue %c_acc[53] : !acc
    %a_449 = llvm.extractvalue %c_acc[54] : !acc
    %a_450 = llvm.extractvalue %c_acc[55] : !acc
    %a_451 = llvm.extractvalue %c_acc[56] : !acc
    %a_452 = llvm.extractvalue %c_acc[57] : !acc
    %a_453 = llvm.extractvalue %c_acc[58] : !acc
    %a_454 = llvm.extractvalue %c_acc[59] : !acc
    %a_455 = llvm.extractvalue %c_acc[60] : !acc
    %a_456 = llvm.extractvalue %c_acc[61] : !acc
    %a_457 = llvm.extractvalue %c_acc[62] : !acc
    %a_458 = llvm.extractvalue %c_acc[63] : !acc
    %a_459 = llvm.extractvalue %c_acc[64] : !acc
    %a_460 = llvm.extractvalue %c_acc[65] : !acc
    %a_461 = llvm.extractvalue %c_acc[66] : !acc
    %a_462 = llvm.extractvalue %c_acc[67] : !acc
    %a_463 = llvm.extractvalue %c_acc[68] : !acc
    %a_464 = llvm.extractvalue %c_acc[69] : !acc
    %a_465 = llvm.extractvalue %c_acc[70] : !acc
    %a_466 = llvm.extractvalue %c_acc[71] : !acc
    %a_467 = llvm.extractvalue %c_acc[72] : !acc
    %a_468 = llvm.extractvalue %c_acc[73] : !acc
    %a_469 = llvm.extractvalue %c_acc[74] : !acc
    %a_470 = llvm.extractvalue %c_acc[75] : !acc
    %a_471 = llvm.extractvalue %c_acc[76] : !acc
    %a_472 = llvm.extractvalue %c_acc[77] : !acc
    %a_473 = llvm.extractvalue %c_acc[78] : !acc
    %a_474 = llvm.extractvalue %c_acc[79] : !acc
    %a_475 = llvm.extractvalue %c_acc[80] : !acc
    %a_476 = llvm.extractvalue %c_acc[81] : !acc
    %a_477 = llvm.extractvalue %c_acc[82] : !acc
    %a_478 = llvm.extractvalue %c_acc[83] : !acc
    %a_479 = llvm.extractvalue %c_acc[84] : !acc
    %a_480 = llvm.extractvalue %c_acc[85] : !acc
    %a_481 = llvm.extractvalue %c_acc[86] : !acc
    %a_482 = llvm.extractvalue %c_acc[87] : !acc
    %a_483 = llvm.extractvalue %c_acc[88] : !acc
    %a_484 = llvm.extractvalue %c_acc[89] : !acc
    %a_485 = llvm.extractvalue %c_acc[90] : !acc
    %a_486 = llvm.extractvalue %c_acc[91] : !acc
    %a_487 = llvm.extractvalue %c_acc[92] : !acc
    %a_488 = llvm.extractvalue %c_acc[93] : !acc
    %a_489 = llvm.extractvalue %c_acc[94] : !acc
    %a_490 = llvm.extractvalue %c_acc[95] : !acc
    %a_491 = llvm.extractvalue %c_acc[96] : !acc
    %a_492 = llvm.extractvalue %c_acc[97] : !acc
    %a_493 = llvm.extractvalue %c_acc[98] : !acc
    %a_494 = llvm.extractvalue %c_acc[99] : !acc
    %a_495 = llvm.extractvalue %c_acc[100] : !acc
    %a_496 = llvm.extractvalue %c_acc[101] : !acc
    %a_497 = llvm.extractvalue %c_acc[102] : !acc
    %a_498 = llvm.extractvalue %c_acc[103] : !acc
    %a_499 = llvm.extractvalue %c_acc[104] : !acc
    %a_500 = llvm.extractvalue %c_acc[105] : !acc
    %a_501 = llvm.extractvalue %c_acc[106] : !acc
    %a_502 = llvm.extractvalue %c_acc[107] : !acc
    %a_503 = llvm.extractvalue %c_acc[108] : !acc
    %a_504 = llvm.extractvalue %c_acc[109] : !acc
    %a_505 = llvm.extractvalue %c_acc[110] : !acc
    %a_506 = llvm.extractvalue %c_acc[111] : !acc
    %a_507 = llvm.extractvalue %c_acc[112] : !acc
    %a_508 = llvm.extractvalue %c_acc[113] : !acc
    %a_509 = llvm.extractvalue %c_acc[114] : !acc
    %a_510 = llvm.extractvalue %c_acc[115] : !acc
    %a_511 = llvm.extractvalue %c_acc[116] : !acc
    %a_512 = llvm.extractvalue %c_acc[117] : !acc
    %a_513 = llvm.extractvalue %c_acc[118] : !acc
    %a_514 = llvm.extractvalue %c_acc[119] : !acc
    %a_515 = llvm.extractvalue %c_acc[120] : !acc
    %a_516 = llvm.extractvalue %c_acc[121] : !acc
    %a_517 = llvm.extractvalue %c_acc[122] : !acc
    %a_518 = llvm.extractvalue %c_acc[123] : !acc
    %a_519 = llvm.extractvalue %c_acc[124] : !acc
    %a_520 = llvm.extractvalue %c_acc[125] : !acc
    %a_521 = llvm.extractvalue %c_acc[126] : !acc
    %a_522 = llvm.extractvalue %c_acc[127] : !acc
    %acc_523 = llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127" %a_395, %a_396, %a_397, %a_398, %a_399, %a_400, %a_401, %a_402, %a_403, %a_404, %a_405, %a_406, %a_407, %a_408, %a_409, %a_410, %a_411, %a_412, %a_413, %a_414, %a_415, %a_416, %a_417, %a_418, %a_419, %a_420, %a_421, %a_422, %a_423, %a_424, %a_425, %a_426, %a_427, %a_428, %a_429, %a_430, %a_431, %a_432, %a_433, %a_434, %a_435, %a_436, %a_437, %a_438, %a_439, %a_440, %a_441, %a_442, %a_443, %a_444, %a_445, %a_446, %a_447, %a_448, %a_449, %a_450, %a_451, %a_452, %a_453, %a_454, %a_455, %a_456, %a_457, %a_458, %a_459, %a_460, %a_461, %a_462, %a_463, %a_464, %a_465, %a_466, %a_467, %a_468, %a_469, %a_470, %a_471, %a_472, %a_473, %a_474, %a_475, %a_476, %a_477, %a_478, %a_479, %a_480, %a_481, %a_482, %a_483, %a_484, %a_485, %a_486, %a_487, %a_488, %a_489, %a_490, %a_491, %a_492, %a_493, %a_494, %a_495, %a_496, %a_497, %a_498, %a_499, %a_500, %a_501, %a_502, %a_503, %a_504, %a_505, %a_506, %a_507, %a_508, %a_509, %a_510, %a_511, %a_512, %a_513, %a_514, %a_515, %a_516, %a_517, %a_518, %a_519, %a_520, %a_521, %a_522 : (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) -> !acc
    llvm.br ^epilogue(%acc_523 : !acc)

  ^epilogue(%e_acc: !acc):  // ---- [epilogue] f32 -> bf16, st.global with bounds checks ----
    // Fragment layout of m64nNk16 f32 D: value v of thread (warp w, lane l) of the warpgroup is
    //   row = 16 w + l/4 + 8 ((v/2) %% 2),  col = 8 (v/4) + 2 (l %% 4) + (v %% 2).
    %v_524 = llvm.mul %cwg_73, %c64_i32 : i32
    %v_525 = llvm.add %m0_21, %v_524 : i32
    %v_526 = llvm.mul %warp_85, %c16_i32 : i32
    %v_527 = llvm.lshr %lane_5, %c2_i32 : i32
    %v_528 = llvm.add %v_526, %v_527 : i32
    %row0_529 = llvm.add %v_525, %v_528 : i32
    %v_530 = llvm.and %lane_5, %c3_i32 : i32
    %v_531 = llvm.mul %v_530, %c2_i32 : i32
    %col0_532 = llvm.add %n0_20, %v_531 : i32
    %row0_64_533 = llvm.zext %row0_529 : i32 to i64
    %col0_64_534 = llvm.zext %col0_532 : i32 to i64
    %v_535 = llvm.zext %m0_21 : i32 to i64
    %v_536 = llvm.zext %n0_20 : i32 to i64
    // Fast path (uniform per CTA): whole 128x256 tile inside C, unit column stride, even row
    // stride, 4-byte aligned base: store bf16 pairs as 32-bit words without checks.
    %v_537 = llvm.add %v_535, %c128_i64 : i64
    %p_538 = llvm.icmp "ule" %v_537, %c_size0 : i64
    %v_539 = llvm.add %v_536, %c256_i64 : i64
    %p_540 = llvm.icmp "ule" %v_539, %c_size1 : i64
    %p_541 = llvm.icmp "eq" %c_stride1, %c1_i64 : i64
    %v_542 = llvm.and %c_stride0, %c1_i64 : i64
    %p_543 = llvm.icmp "eq" %v_542, %c0_i64 : i64
    %v_544 = llvm.and %c_ptr, %c3_i64 : i64
    %p_545 = llvm.icmp "eq" %v_544, %c0_i64 : i64
    %v_546 = llvm.and %p_538, %p_540 : i1
    %v_547 = llvm.and %p_541, %p_543 : i1
    %v_548 = llvm.and %v_546, %v_547 : i1
    %fast_549 = llvm.and %v_548, %p_545 : i1
    %c_base_550 = llvm.inttoptr %c_ptr : i64 to !llvm.ptr<1>
    llvm.cond_br %fast_549, ^epi_fast, ^epi_slow

  ^epi_fast:
    %v_551 = llvm.mul %row0_64_533, %c_stride0 : i64
    %v_552 = llvm.add %v_551, %col0_64_534 : i64
    %p_row_553 = llvm.getelementptr %c_base_550[%v_552] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    %v_554 = llvm.mul %c_stride0, %c8_i64 : i64
    %p_row8_555 = llvm.getelementptr %p_row_553[%v_554] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    %u2_556 = llvm.mlir.undef : vector<2xf32>
    %x_557 = llvm.extractvalue %e_acc[0] : !acc
    %x_558 = llvm.extractvalue %e_acc[1] : !acc
    %vec_559 = llvm.insertelement %x_557, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_560 = llvm.insertelement %x_558, %vec_559[%c1_i32 : i32] : vector<2xf32>
    %bf_561 = llvm.fptrunc %vec_560 : vector<2xf32> to vector<2xbf16>
    %p_562 = llvm.getelementptr %p_row_553[0] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_561, %p_562 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_563 = llvm.extractvalue %e_acc[2] : !acc
    %x_564 = llvm.extractvalue %e_acc[3] : !acc
    %vec_565 = llvm.insertelement %x_563, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_566 = llvm.insertelement %x_564, %vec_565[%c1_i32 : i32] : vector<2xf32>
    %bf_567 = llvm.fptrunc %vec_566 : vector<2xf32> to vector<2xbf16>
    %p_568 = llvm.getelementptr %p_row8_555[0] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_567, %p_568 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_569 = llvm.extractvalue %e_acc[4] : !acc
    %x_570 = llvm.extractvalue %e_acc[5] : !acc
    %vec_571 = llvm.insertelement %x_569, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_572 = llvm.insertelement %x_570, %vec_571[%c1_i32 : i32] : vector<2xf32>
    %bf_573 = llvm.fptrunc %vec_572 : vector<2xf32> to vector<2xbf16>
    %p_574 = llvm.getelementptr %p_row_553[8] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_573, %p_574 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_575 = llvm.extractvalue %e_acc[6] : !acc
    %x_576 = llvm.extractvalue %e_acc[7] : !acc
    %vec_577 = llvm.insertelement %x_575, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_578 = llvm.insertelement %x_576, %vec_577[%c1_i32 : i32] : vector<2xf32>
    %bf_579 = llvm.fptrunc %vec_578 : vector<2xf32> to vector<2xbf16>
    %p_580 = llvm.getelementptr %p_row8_555[8] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_579, %p_580 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_581 = llvm.extractvalue %e_acc[8] : !acc
    %x_582 = llvm.extractvalue %e_acc[9] : !acc
    %vec_583 = llvm.insertelement %x_581, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_584 = llvm.insertelement %x_582, %vec_583[%c1_i32 : i32] : vector<2xf32>
    %bf_585 = llvm.fptrunc %vec_584 : vector<2xf32> to vector<2xbf16>
    %p_586 = llvm.getelementptr %p_row_553[16] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_585, %p_586 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_587 = llvm.extractvalue %e_acc[10] : !acc
    %x_588 = llvm.extractvalue %e_acc[11] : !acc
    %vec_589 = llvm.insertelement %x_587, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_590 = llvm.insertelement %x_588, %vec_589[%c1_i32 : i32] : vector<2xf32>
    %bf_591 = llvm.fptrunc %vec_590 : vector<2xf32> to vector<2xbf16>
    %p_592 = llvm.getelementptr %p_row8_555[16] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_591, %p_592 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_593 = llvm.extractvalue %e_acc[12] : !acc
    %x_594 = llvm.extractvalue %e_acc[13] : !acc
    %vec_595 = llvm.insertelement %x_593, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_596 = llvm.insertelement %x_594, %vec_595[%c1_i32 : i32] : vector<2xf32>
    %bf_597 = llvm.fptrunc %vec_596 : vector<2xf32> to vector<2xbf16>
    %p_598 = llvm.getelementptr %p_row_553[24] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_597, %p_598 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_599 = llvm.extractvalue %e_acc[14] : !acc
    %x_600 = llvm.extractvalue %e_acc[15] : !acc
    %vec_601 = llvm.insertelement %x_599, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_602 = llvm.insertelement %x_600, %vec_601[%c1_i32 : i32] : vector<2xf32>
    %bf_603 = llvm.fptrunc %vec_602 : vector<2xf32> to vector<2xbf16>
    %p_604 = llvm.getelementptr %p_row8_555[24] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_603, %p_604 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_605 = llvm.extractvalue %e_acc[16] : !acc
    %x_606 = llvm.extractvalue %e_acc[17] : !acc
    %vec_607 = llvm.insertelement %x_605, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_608 = llvm.insertelement %x_606, %vec_607[%c1_i32 : i32] : vector<2xf32>
    %bf_609 = llvm.fptrunc %vec_608 : vector<2xf32> to vector<2xbf16>
    %p_610 = llvm.getelementptr %p_row_553[32] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_609, %p_610 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_611 = llvm.extractvalue %e_acc[18] : !acc
    %x_612 = llvm.extractvalue %e_acc[19] : !acc
    %vec_613 = llvm.insertelement %x_611, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_614 = llvm.insertelement %x_612, %vec_613[%c1_i32 : i32] : vector<2xf32>
    %bf_615 = llvm.fptrunc %vec_614 : vector<2xf32> to vector<2xbf16>
    %p_616 = llvm.getelementptr %p_row8_555[32] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_615, %p_616 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_617 = llvm.extractvalue %e_acc[20] : !acc
    %x_618 = llvm.extractvalue %e_acc[21] : !acc
    %vec_619 = llvm.insertelement %x_617, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_620 = llvm.insertelement %x_618, %vec_619[%c1_i32 : i32] : vector<2xf32>
    %bf_621 = llvm.fptrunc %vec_620 : vector<2xf32> to vector<2xbf16>
    %p_622 = llvm.getelementptr %p_row_553[40] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_621, %p_622 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_623 = llvm.extractvalue %e_acc[22] : !acc
    %x_624 = llvm.extractvalue %e_acc[23] : !acc
    %vec_625 = llvm.insertelement %x_623, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_626 = llvm.insertelement %x_624, %vec_625[%c1_i32 : i32] : vector<2xf32>
    %bf_627 = llvm.fptrunc %vec_626 : vector<2xf32> to vector<2xbf16>
    %p_628 = llvm.getelementptr %p_row8_555[40] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_627, %p_628 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_629 = llvm.extractvalue %e_acc[24] : !acc
    %x_630 = llvm.extractvalue %e_acc[25] : !acc
    %vec_631 = llvm.insertelement %x_629, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_632 = llvm.insertelement %x_630, %vec_631[%c1_i32 : i32] : vector<2xf32>
    %bf_633 = llvm.fptrunc %vec_632 : vector<2xf32> to vector<2xbf16>
    %p_634 = llvm.getelementptr %p_row_553[48] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_633, %p_634 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_635 = llvm.extractvalue %e_acc[26] : !acc
    %x_636 = llvm.extractvalue %e_acc[27] : !acc
    %vec_637 = llvm.insertelement %x_635, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_638 = llvm.insertelement %x_636, %vec_637[%c1_i32 : i32] : vector<2xf32>
    %bf_639 = llvm.fptrunc %vec_638 : vector<2xf32> to vector<2xbf16>
    %p_640 = llvm.getelementptr %p_row8_555[48] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_639, %p_640 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_641 = llvm.extractvalue %e_acc[28] : !acc
    %x_642 = llvm.extractvalue %e_acc[29] : !acc
    %vec_643 = llvm.insertelement %x_641, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_644 = llvm.insertelement %x_642, %vec_643[%c1_i32 : i32] : vector<2xf32>
    %bf_645 = llvm.fptrunc %vec_644 : vector<2xf32> to vector<2xbf16>
    %p_646 = llvm.getelementptr %p_row_553[56] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_645, %p_646 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_647 = llvm.extractvalue %e_acc[30] : !acc
    %x_648 = llvm.extractvalue %e_acc[31] : !acc
    %vec_649 = llvm.insertelement %x_647, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_650 = llvm.insertelement %x_648, %vec_649[%c1_i32 : i32] : vector<2xf32>
    %bf_651 = llvm.fptrunc %vec_650 : vector<2xf32> to vector<2xbf16>
    %p_652 = llvm.getelementptr %p_row8_555[56] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_651, %p_652 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_653 = llvm.extractvalue %e_acc[32] : !acc
    %x_654 = llvm.extractvalue %e_acc[33] : !acc
    %vec_655 = llvm.insertelement %x_653, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_656 = llvm.insertelement %x_654, %vec_655[%c1_i32 : i32] : vector<2xf32>
    %bf_657 = llvm.fptrunc %vec_656 : vector<2xf32> to vector<2xbf16>
    %p_658 = llvm.getelementptr %p_row_553[64] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_657, %p_658 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_659 = llvm.extractvalue %e_acc[34] : !acc
    %x_660 = llvm.extractvalue %e_acc[35] : !acc
    %vec_661 = llvm.insertelement %x_659, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_662 = llvm.insertelement %x_660, %vec_661[%c1_i32 : i32] : vector<2xf32>
    %bf_663 = llvm.fptrunc %vec_662 : vector<2xf32> to vector<2xbf16>
    %p_664 = llvm.getelementptr %p_row8_555[64] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_663, %p_664 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_665 = llvm.extractvalue %e_acc[36] : !acc
    %x_666 = llvm.extractvalue %e_acc[37] : !acc
    %vec_667 = llvm.insertelement %x_665, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_668 = llvm.insertelement %x_666, %vec_667[%c1_i32 : i32] : vector<2xf32>
    %bf_669 = llvm.fptrunc %vec_668 : vector<2xf32> to vector<2xbf16>
    %p_670 = llvm.getelementptr %p_row_553[72] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_669, %p_670 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_671 = llvm.extractvalue %e_acc[38] : !acc
    %x_672 = llvm.extractvalue %e_acc[39] : !acc
    %vec_673 = llvm.insertelement %x_671, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_674 = llvm.insertelement %x_672, %vec_673[%c1_i32 : i32] : vector<2xf32>
    %bf_675 = llvm.fptrunc %vec_674 : vector<2xf32> to vector<2xbf16>
    %p_676 = llvm.getelementptr %p_row8_555[72] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_675, %p_676 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_677 = llvm.extractvalue %e_acc[40] : !acc
    %x_678 = llvm.extractvalue %e_acc[41] : !acc
    %vec_679 = llvm.insertelement %x_677, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_680 = llvm.insertelement %x_678, %vec_679[%c1_i32 : i32] : vector<2xf32>
    %bf_681 = llvm.fptrunc %vec_680 : vector<2xf32> to vector<2xbf16>
    %p_682 = llvm.getelementptr %p_row_553[80] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_681, %p_682 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_683 = llvm.extractvalue %e_acc[42] : !acc
    %x_684 = llvm.extractvalue %e_acc[43] : !acc
    %vec_685 = llvm.insertelement %x_683, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_686 = llvm.insertelement %x_684, %vec_685[%c1_i32 : i32] : vector<2xf32>
    %bf_687 = llvm.fptrunc %vec_686 : vector<2xf32> to vector<2xbf16>
    %p_688 = llvm.getelementptr %p_row8_555[80] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_687, %p_688 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_689 = llvm.extractvalue %e_acc[44] : !acc
    %x_690 = llvm.extractvalue %e_acc[45] : !acc
    %vec_691 = llvm.insertelement %x_689, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_692 = llvm.insertelement %x_690, %vec_691[%c1_i32 : i32] : vector<2xf32>
    %bf_693 = llvm.fptrunc %vec_692 : vector<2xf32> to vector<2xbf16>
    %p_694 = llvm.getelementptr %p_row_553[88] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_693, %p_694 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_695 = llvm.extractvalue %e_acc[46] : !acc
    %x_696 = llvm.extractvalue %e_acc[47] : !acc
    %vec_697 = llvm.insertelement %x_695, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_698 = llvm.insertelement %x_696, %vec_697[%c1_i32 : i32] : vector<2xf32>
    %bf_699 = llvm.fptrunc %vec_698 : vector<2xf32> to vector<2xbf16>
    %p_700 = llvm.getelementptr %p_row8_555[88] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_699, %p_700 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_701 = llvm.extractvalue %e_acc[48] : !acc
    %x_702 = llvm.extractvalue %e_acc[49] : !acc
    %vec_703 = llvm.insertelement %x_701, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_704 = llvm.insertelement %x_702, %vec_703[%c1_i32 : i32] : vector<2xf32>
    %bf_705 = llvm.fptrunc %vec_704 : vector<2xf32> to vector<2xbf16>
    %p_706 = llvm.getelementptr %p_row_553[96] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_705, %p_706 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_707 = llvm.extractvalue %e_acc[50] : !acc
    %x_708 = llvm.extractvalue %e_acc[51] : !acc
    %vec_709 = llvm.insertelement %x_707, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_710 = llvm.insertelement %x_708, %vec_709[%c1_i32 : i32] : vector<2xf32>
    %bf_711 = llvm.fptrunc %vec_710 : vector<2xf32> to vector<2xbf16>
    %p_712 = llvm.getelementptr %p_row8_555[96] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_711, %p_712 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_713 = llvm.extractvalue %e_acc[52] : !acc
    %x_714 = llvm.extractvalue %e_acc[53] : !acc
    %vec_715 = llvm.insertelement %x_713, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_716 = llvm.insertelement %x_714, %vec_715[%c1_i32 : i32] : vector<2xf32>
    %bf_717 = llvm.fptrunc %vec_716 : vector<2xf32> to vector<2xbf16>
    %p_718 = llvm.getelementptr %p_row_553[104] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_717, %p_718 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_719 = llvm.extractvalue %e_acc[54] : !acc
    %x_720 = llvm.extractvalue %e_acc[55] : !acc
    %vec_721 = llvm.insertelement %x_719, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_722 = llvm.insertelement %x_720, %vec_721[%c1_i32 : i32] : vector<2xf32>
    %bf_723 = llvm.fptrunc %vec_722 : vector<2xf32> to vector<2xbf16>
    %p_724 = llvm.getelementptr %p_row8_555[104] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_723, %p_724 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_725 = llvm.extractvalue %e_acc[56] : !acc
    %x_726 = llvm.extractvalue %e_acc[57] : !acc
    %vec_727 = llvm.insertelement %x_725, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_728 = llvm.insertelement %x_726, %vec_727[%c1_i32 : i32] : vector<2xf32>
    %bf_729 = llvm.fptrunc %vec_728 : vector<2xf32> to vector<2xbf16>
    %p_730 = llvm.getelementptr %p_row_553[112] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_729, %p_730 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_731 = llvm.extractvalue %e_acc[58] : !acc
    %x_732 = llvm.extractvalue %e_acc[59] : !acc
    %vec_733 = llvm.insertelement %x_731, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_734 = llvm.insertelement %x_732, %vec_733[%c1_i32 : i32] : vector<2xf32>
    %bf_735 = llvm.fptrunc %vec_734 : vector<2xf32> to vector<2xbf16>
    %p_736 = llvm.getelementptr %p_row8_555[112] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_735, %p_736 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_737 = llvm.extractvalue %e_acc[60] : !acc
    %x_738 = llvm.extractvalue %e_acc[61] : !acc
    %vec_739 = llvm.insertelement %x_737, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_740 = llvm.insertelement %x_738, %vec_739[%c1_i32 : i32] : vector<2xf32>
    %bf_741 = llvm.fptrunc %vec_740 : vector<2xf32> to vector<2xbf16>
    %p_742 = llvm.getelementptr %p_row_553[120] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_741, %p_742 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_743 = llvm.extractvalue %e_acc[62] : !acc
    %x_744 = llvm.extractvalue %e_acc[63] : !acc
    %vec_745 = llvm.insertelement %x_743, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_746 = llvm.insertelement %x_744, %vec_745[%c1_i32 : i32] : vector<2xf32>
    %bf_747 = llvm.fptrunc %vec_746 : vector<2xf32> to vector<2xbf16>
    %p_748 = llvm.getelementptr %p_row8_555[120] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_747, %p_748 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_749 = llvm.extractvalue %e_acc[64] : !acc
    %x_750 = llvm.extractvalue %e_acc[65] : !acc
    %vec_751 = llvm.insertelement %x_749, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_752 = llvm.insertelement %x_750, %vec_751[%c1_i32 : i32] : vector<2xf32>
    %bf_753 = llvm.fptrunc %vec_752 : vector<2xf32> to vector<2xbf16>
    %p_754 = llvm.getelementptr %p_row_553[128] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_753, %p_754 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_755 = llvm.extractvalue %e_acc[66] : !acc
    %x_756 = llvm.extractvalue %e_acc[67] : !acc
    %vec_757 = llvm.insertelement %x_755, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_758 = llvm.insertelement %x_756, %vec_757[%c1_i32 : i32] : vector<2xf32>
    %bf_759 = llvm.fptrunc %vec_758 : vector<2xf32> to vector<2xbf16>
    %p_760 = llvm.getelementptr %p_row8_555[128] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_759, %p_760 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_761 = llvm.extractvalue %e_acc[68] : !acc
    %x_762 = llvm.extractvalue %e_acc[69] : !acc
    %vec_763 = llvm.insertelement %x_761, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_764 = llvm.insertelement %x_762, %vec_763[%c1_i32 : i32] : vector<2xf32>
    %bf_765 = llvm.fptrunc %vec_764 : vector<2xf32> to vector<2xbf16>
    %p_766 = llvm.getelementptr %p_row_553[136] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_765, %p_766 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_767 = llvm.extractvalue %e_acc[70] : !acc
    %x_768 = llvm.extractvalue %e_acc[71] : !acc
    %vec_769 = llvm.insertelement %x_767, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_770 = llvm.insertelement %x_768, %vec_769[%c1_i32 : i32] : vector<2xf32>
    %bf_771 = llvm.fptrunc %vec_770 : vector<2xf32> to vector<2xbf16>
    %p_772 = llvm.getelementptr %p_row8_555[136] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_771, %p_772 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_773 = llvm.extractvalue %e_acc[72] : !acc
    %x_774 = llvm.extractvalue %e_acc[73] : !acc
    %vec_775 = llvm.insertelement %x_773, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_776 = llvm.insertelement %x_774, %vec_775[%c1_i32 : i32] : vector<2xf32>
    %bf_777 = llvm.fptrunc %vec_776 : vector<2xf32> to vector<2xbf16>
    %p_778 = llvm.getelementptr %p_row_553[144] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_777, %p_778 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_779 = llvm.extractvalue %e_acc[74] : !acc
    %x_780 = llvm.extractvalue %e_acc[75] : !acc
    %vec_781 = llvm.insertelement %x_779, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_782 = llvm.insertelement %x_780, %vec_781[%c1_i32 : i32] : vector<2xf32>
    %bf_783 = llvm.fptrunc %vec_782 : vector<2xf32> to vector<2xbf16>
    %p_784 = llvm.getelementptr %p_row8_555[144] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_783, %p_784 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_785 = llvm.extractvalue %e_acc[76] : !acc
    %x_786 = llvm.extractvalue %e_acc[77] : !acc
    %vec_787 = llvm.insertelement %x_785, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_788 = llvm.insertelement %x_786, %vec_787[%c1_i32 : i32] : vector<2xf32>
    %bf_789 = llvm.fptrunc %vec_788 : vector<2xf32> to vector<2xbf16>
    %p_790 = llvm.getelementptr %p_row_553[152] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_789, %p_790 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_791 = llvm.extractvalue %e_acc[78] : !acc
    %x_792 = llvm.extractvalue %e_acc[79] : !acc
    %vec_793 = llvm.insertelement %x_791, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_794 = llvm.insertelement %x_792, %vec_793[%c1_i32 : i32] : vector<2xf32>
    %bf_795 = llvm.fptrunc %vec_794 : vector<2xf32> to vector<2xbf16>
    %p_796 = llvm.getelementptr %p_row8_555[152] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_795, %p_796 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_797 = llvm.extractvalue %e_acc[80] : !acc
    %x_798 = llvm.extractvalue %e_acc[81] : !acc
    %vec_799 = llvm.insertelement %x_797, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_800 = llvm.insertelement %x_798, %vec_799[%c1_i32 : i32] : vector<2xf32>
    %bf_801 = llvm.fptrunc %vec_800 : vector<2xf32> to vector<2xbf16>
    %p_802 = llvm.getelementptr %p_row_553[160] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_801, %p_802 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_803 = llvm.extractvalue %e_acc[82] : !acc
    %x_804 = llvm.extractvalue %e_acc[83] : !acc
    %vec_805 = llvm.insertelement %x_803, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_806 = llvm.insertelement %x_804, %vec_805[%c1_i32 : i32] : vector<2xf32>
    %bf_807 = llvm.fptrunc %vec_806 : vector<2xf32> to vector<2xbf16>
    %p_808 = llvm.getelementptr %p_row8_555[160] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_807, %p_808 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_809 = llvm.extractvalue %e_acc[84] : !acc
    %x_810 = llvm.extractvalue %e_acc[85] : !acc
    %vec_811 = llvm.insertelement %x_809, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_812 = llvm.insertelement %x_810, %vec_811[%c1_i32 : i32] : vector<2xf32>
    %bf_813 = llvm.fptrunc %vec_812 : vector<2xf32> to vector<2xbf16>
    %p_814 = llvm.getelementptr %p_row_553[168] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_813, %p_814 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_815 = llvm.extractvalue %e_acc[86] : !acc
    %x_816 = llvm.extractvalue %e_acc[87] : !acc
    %vec_817 = llvm.insertelement %x_815, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_818 = llvm.insertelement %x_816, %vec_817[%c1_i32 : i32] : vector<2xf32>
    %bf_819 = llvm.fptrunc %vec_818 : vector<2xf32> to vector<2xbf16>
    %p_820 = llvm.getelementptr %p_row8_555[168] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_819, %p_820 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_821 = llvm.extractvalue %e_acc[88] : !acc
    %x_822 = llvm.extractvalue %e_acc[89] : !acc
    %vec_823 = llvm.insertelement %x_821, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_824 = llvm.insertelement %x_822, %vec_823[%c1_i32 : i32] : vector<2xf32>
    %bf_825 = llvm.fptrunc %vec_824 : vector<2xf32> to vector<2xbf16>
    %p_826 = llvm.getelementptr %p_row_553[176] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_825, %p_826 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_827 = llvm.extractvalue %e_acc[90] : !acc
    %x_828 = llvm.extractvalue %e_acc[91] : !acc
    %vec_829 = llvm.insertelement %x_827, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_830 = llvm.insertelement %x_828, %vec_829[%c1_i32 : i32] : vector<2xf32>
    %bf_831 = llvm.fptrunc %vec_830 : vector<2xf32> to vector<2xbf16>
    %p_832 = llvm.getelementptr %p_row8_555[176] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_831, %p_832 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_833 = llvm.extractvalue %e_acc[92] : !acc
    %x_834 = llvm.extractvalue %e_acc[93] : !acc
    %vec_835 = llvm.insertelement %x_833, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_836 = llvm.insertelement %x_834, %vec_835[%c1_i32 : i32] : vector<2xf32>
    %bf_837 = llvm.fptrunc %vec_836 : vector<2xf32> to vector<2xbf16>
    %p_838 = llvm.getelementptr %p_row_553[184] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_837, %p_838 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_839 = llvm.extractvalue %e_acc[94] : !acc
    %x_840 = llvm.extractvalue %e_acc[95] : !acc
    %vec_841 = llvm.insertelement %x_839, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_842 = llvm.insertelement %x_840, %vec_841[%c1_i32 : i32] : vector<2xf32>
    %bf_843 = llvm.fptrunc %vec_842 : vector<2xf32> to vector<2xbf16>
    %p_844 = llvm.getelementptr %p_row8_555[184] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_843, %p_844 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_845 = llvm.extractvalue %e_acc[96] : !acc
    %x_846 = llvm.extractvalue %e_acc[97] : !acc
    %vec_847 = llvm.insertelement %x_845, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_848 = llvm.insertelement %x_846, %vec_847[%c1_i32 : i32] : vector<2xf32>
    %bf_849 = llvm.fptrunc %vec_848 : vector<2xf32> to vector<2xbf16>
    %p_850 = llvm.getelementptr %p_row_553[192] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_849, %p_850 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_851 = llvm.extractvalue %e_acc[98] : !acc
    %x_852 = llvm.extractvalue %e_acc[99] : !acc
    %vec_853 = llvm.insertelement %x_851, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_854 = llvm.insertelement %x_852, %vec_853[%c1_i32 : i32] : vector<2xf32>
    %bf_855 = llvm.fptrunc %vec_854 : vector<2xf32> to vector<2xbf16>
    %p_856 = llvm.getelementptr %p_row8_555[192] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_855, %p_856 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_857 = llvm.extractvalue %e_acc[100] : !acc
    %x_858 = llvm.extractvalue %e_acc[101] : !acc
    %vec_859 = llvm.insertelement %x_857, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_860 = llvm.insertelement %x_858, %vec_859[%c1_i32 : i32] : vector<2xf32>
    %bf_861 = llvm.fptrunc %vec_860 : vector<2xf32> to vector<2xbf16>
    %p_862 = llvm.getelementptr %p_row_553[200] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_861, %p_862 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_863 = llvm.extractvalue %e_acc[102] : !acc
    %x_864 = llvm.extractvalue %e_acc[103] : !acc
    %vec_865 = llvm.insertelement %x_863, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_866 = llvm.insertelement %x_864, %vec_865[%c1_i32 : i32] : vector<2xf32>
    %bf_867 = llvm.fptrunc %vec_866 : vector<2xf32> to vector<2xbf16>
    %p_868 = llvm.getelementptr %p_row8_555[200] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_867, %p_868 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_869 = llvm.extractvalue %e_acc[104] : !acc
    %x_870 = llvm.extractvalue %e_acc[105] : !acc
    %vec_871 = llvm.insertelement %x_869, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_872 = llvm.insertelement %x_870, %vec_871[%c1_i32 : i32] : vector<2xf32>
    %bf_873 = llvm.fptrunc %vec_872 : vector<2xf32> to vector<2xbf16>
    %p_874 = llvm.getelementptr %p_row_553[208] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_873, %p_874 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_875 = llvm.extractvalue %e_acc[106] : !acc
    %x_876 = llvm.extractvalue %e_acc[107] : !acc
    %vec_877 = llvm.insertelement %x_875, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_878 = llvm.insertelement %x_876, %vec_877[%c1_i32 : i32] : vector<2xf32>
    %bf_879 = llvm.fptrunc %vec_878 : vector<2xf32> to vector<2xbf16>
    %p_880 = llvm.getelementptr %p_row8_555[208] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_879, %p_880 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_881 = llvm.extractvalue %e_acc[108] : !acc
    %x_882 = llvm.extractvalue %e_acc[109] : !acc
    %vec_883 = llvm.insertelement %x_881, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_884 = llvm.insertelement %x_882, %vec_883[%c1_i32 : i32] : vector<2xf32>
    %bf_885 = llvm.fptrunc %vec_884 : vector<2xf32> to vector<2xbf16>
    %p_886 = llvm.getelementptr %p_row_553[216] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_885, %p_886 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_887 = llvm.extractvalue %e_acc[110] : !acc
    %x_888 = llvm.extractvalue %e_acc[111] : !acc
    %vec_889 = llvm.insertelement %x_887, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_890 = llvm.insertelement %x_888, %vec_889[%c1_i32 : i32] : vector<2xf32>
    %bf_891 = llvm.fptrunc %vec_890 : vector<2xf32> to vector<2xbf16>
    %p_892 = llvm.getelementptr %p_row8_555[216] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_891, %p_892 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_893 = llvm.extractvalue %e_acc[112] : !acc
    %x_894 = llvm.extractvalue %e_acc[113] : !acc
    %vec_895 = llvm.insertelement %x_893, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_896 = llvm.insertelement %x_894, %vec_895[%c1_i32 : i32] : vector<2xf32>
    %bf_897 = llvm.fptrunc %vec_896 : vector<2xf32> to vector<2xbf16>
    %p_898 = llvm.getelementptr %p_row_553[224] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_897, %p_898 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_899 = llvm.extractvalue %e_acc[114] : !acc
    %x_900 = llvm.extractvalue %e_acc[115] : !acc
    %vec_901 = llvm.insertelement %x_899, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_902 = llvm.insertelement %x_900, %vec_901[%c1_i32 : i32] : vector<2xf32>
    %bf_903 = llvm.fptrunc %vec_902 : vector<2xf32> to vector<2xbf16>
    %p_904 = llvm.getelementptr %p_row8_555[224] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_903, %p_904 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_905 = llvm.extractvalue %e_acc[116] : !acc
    %x_906 = llvm.extractvalue %e_acc[117] : !acc
    %vec_907 = llvm.insertelement %x_905, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_908 = llvm.insertelement %x_906, %vec_907[%c1_i32 : i32] : vector<2xf32>
    %bf_909 = llvm.fptrunc %vec_908 : vector<2xf32> to vector<2xbf16>
    %p_910 = llvm.getelementptr %p_row_553[232] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_909, %p_910 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_911 = llvm.extractvalue %e_acc[118] : !acc
    %x_912 = llvm.extractvalue %e_acc[119] : !acc
    %vec_913 = llvm.insertelement %x_911, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_914 = llvm.insertelement %x_912, %vec_913[%c1_i32 : i32] : vector<2xf32>
    %bf_915 = llvm.fptrunc %vec_914 : vector<2xf32> to vector<2xbf16>
    %p_916 = llvm.getelementptr %p_row8_555[232] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_915, %p_916 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_917 = llvm.extractvalue %e_acc[120] : !acc
    %x_918 = llvm.extractvalue %e_acc[121] : !acc
    %vec_919 = llvm.insertelement %x_917, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_920 = llvm.insertelement %x_918, %vec_919[%c1_i32 : i32] : vector<2xf32>
    %bf_921 = llvm.fptrunc %vec_920 : vector<2xf32> to vector<2xbf16>
    %p_922 = llvm.getelementptr %p_row_553[240] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_921, %p_922 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_923 = llvm.extractvalue %e_acc[122] : !acc
    %x_924 = llvm.extractvalue %e_acc[123] : !acc
    %vec_925 = llvm.insertelement %x_923, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_926 = llvm.insertelement %x_924, %vec_925[%c1_i32 : i32] : vector<2xf32>
    %bf_927 = llvm.fptrunc %vec_926 : vector<2xf32> to vector<2xbf16>
    %p_928 = llvm.getelementptr %p_row8_555[240] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_927, %p_928 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_929 = llvm.extractvalue %e_acc[124] : !acc
    %x_930 = llvm.extractvalue %e_acc[125] : !acc
    %vec_931 = llvm.insertelement %x_929, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_932 = llvm.insertelement %x_930, %vec_931[%c1_i32 : i32] : vector<2xf32>
    %bf_933 = llvm.fptrunc %vec_932 : vector<2xf32> to vector<2xbf16>
    %p_934 = llvm.getelementptr %p_row_553[248] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_933, %p_934 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    %x_935 = llvm.extractvalue %e_acc[126] : !acc
    %x_936 = llvm.extractvalue %e_acc[127] : !acc
    %vec_937 = llvm.insertelement %x_935, %u2_556[%c0_i32 : i32] : vector<2xf32>
    %vec_938 = llvm.insertelement %x_936, %vec_937[%c1_i32 : i32] : vector<2xf32>
    %bf_939 = llvm.fptrunc %vec_938 : vector<2xf32> to vector<2xbf16>
    %p_940 = llvm.getelementptr %p_row8_555[248] : (!llvm.ptr<1>) -> !llvm.ptr<1>, bf16
    llvm.store %bf_939, %p_940 {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<1>
    llvm.br ^exit

  ^epi_slow:  // ragged or strided C: every element checked against (size0, size1)
    %row_941 = llvm.add %row0_64_533, %c0_i64 : i64
    %row_942 = llvm.add %row0_64_533, %c8_i64 : i64
    %rowok_943 = llvm.icmp "ult" %row_941, %c_size0 : i64
    %rowok_944 = llvm.icmp "ult" %row_942, %c_size0 : i64
    %rowoff_945 = llvm.mul %row_941, %c_stride0 : i64
    %rowoff_946 = llvm.mul %row_942, %c_stride0 : i64
    %col_947 = llvm.add %col0_64_534, %c0_i64 : i64
    %colok_948 = llvm.icmp "ult" %col_947, %c_size1 : i64
    %coloff_949 = llvm.mul %col_947, %c_stride1 : i64
    %ok_950 = llvm.and %rowok_943, %colok_948 : i1
    llvm.cond_br %ok_950, ^st0, ^sk0
  ^st0:
    %x_951 = llvm.extractvalue %e_acc[0] : !acc
    %b_952 = llvm.fptrunc %x_951 : f32 to bf16
    %v_953 = llvm.add %rowoff_945, %coloff_949 : i64
    %p_954 = llvm.getelementptr %c_base_550[%v_953] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_952, %p_954 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk0
  ^sk0:
    %ok_955 = llvm.and %rowok_944, %colok_948 : i1
    llvm.cond_br %ok_955, ^st1, ^sk1
  ^st1:
    %x_956 = llvm.extractvalue %e_acc[2] : !acc
    %b_957 = llvm.fptrunc %x_956 : f32 to bf16
    %v_958 = llvm.add %rowoff_946, %coloff_949 : i64
    %p_959 = llvm.getelementptr %c_base_550[%v_958] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_957, %p_959 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk1
  ^sk1:
    %col_960 = llvm.add %col0_64_534, %c1_i64 : i64
    %colok_961 = llvm.icmp "ult" %col_960, %c_size1 : i64
    %coloff_962 = llvm.mul %col_960, %c_stride1 : i64
    %ok_963 = llvm.and %rowok_943, %colok_961 : i1
    llvm.cond_br %ok_963, ^st2, ^sk2
  ^st2:
    %x_964 = llvm.extractvalue %e_acc[1] : !acc
    %b_965 = llvm.fptrunc %x_964 : f32 to bf16
    %v_966 = llvm.add %rowoff_945, %coloff_962 : i64
    %p_967 = llvm.getelementptr %c_base_550[%v_966] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_965, %p_967 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk2
  ^sk2:
    %ok_968 = llvm.and %rowok_944, %colok_961 : i1
    llvm.cond_br %ok_968, ^st3, ^sk3
  ^st3:
    %x_969 = llvm.extractvalue %e_acc[3] : !acc
    %b_970 = llvm.fptrunc %x_969 : f32 to bf16
    %v_971 = llvm.add %rowoff_946, %coloff_962 : i64
    %p_972 = llvm.getelementptr %c_base_550[%v_971] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_970, %p_972 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk3
  ^sk3:
    %col_973 = llvm.add %col0_64_534, %c8_i64 : i64
    %colok_974 = llvm.icmp "ult" %col_973, %c_size1 : i64
    %coloff_975 = llvm.mul %col_973, %c_stride1 : i64
    %ok_976 = llvm.and %rowok_943, %colok_974 : i1
    llvm.cond_br %ok_976, ^st4, ^sk4
  ^st4:
    %x_977 = llvm.extractvalue %e_acc[4] : !acc
    %b_978 = llvm.fptrunc %x_977 : f32 to bf16
    %v_979 = llvm.add %rowoff_945, %coloff_975 : i64
    %p_980 = llvm.getelementptr %c_base_550[%v_979] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_978, %p_980 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk4
  ^sk4:
    %ok_981 = llvm.and %rowok_944, %colok_974 : i1
    llvm.cond_br %ok_981, ^st5, ^sk5
  ^st5:
    %x_982 = llvm.extractvalue %e_acc[6] : !acc
    %b_983 = llvm.fptrunc %x_982 : f32 to bf16
    %v_984 = llvm.add %rowoff_946, %coloff_975 : i64
    %p_985 = llvm.getelementptr %c_base_550[%v_984] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_983, %p_985 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk5
  ^sk5:
    %col_986 = llvm.add %col0_64_534, %c9_i64 : i64
    %colok_987 = llvm.icmp "ult" %col_986, %c_size1 : i64
    %coloff_988 = llvm.mul %col_986, %c_stride1 : i64
    %ok_989 = llvm.and %rowok_943, %colok_987 : i1
    llvm.cond_br %ok_989, ^st6, ^sk6
  ^st6:
    %x_990 = llvm.extractvalue %e_acc[5] : !acc
    %b_991 = llvm.fptrunc %x_990 : f32 to bf16
    %v_992 = llvm.add %rowoff_945, %coloff_988 : i64
    %p_993 = llvm.getelementptr %c_base_550[%v_992] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_991, %p_993 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk6
  ^sk6:
    %ok_994 = llvm.and %rowok_944, %colok_987 : i1
    llvm.cond_br %ok_994, ^st7, ^sk7
  ^st7:
    %x_995 = llvm.extractvalue %e_acc[7] : !acc
    %b_996 = llvm.fptrunc %x_995 : f32 to bf16
    %v_997 = llvm.add %rowoff_946, %coloff_988 : i64
    %p_998 = llvm.getelementptr %c_base_550[%v_997] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_996, %p_998 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk7
  ^sk7:
    %col_999 = llvm.add %col0_64_534, %c16_i64 : i64
    %colok_1000 = llvm.icmp "ult" %col_999, %c_size1 : i64
    %coloff_1001 = llvm.mul %col_999, %c_stride1 : i64
    %ok_1002 = llvm.and %rowok_943, %colok_1000 : i1
    llvm.cond_br %ok_1002, ^st8, ^sk8
  ^st8:
    %x_1003 = llvm.extractvalue %e_acc[8] : !acc
    %b_1004 = llvm.fptrunc %x_1003 : f32 to bf16
    %v_1005 = llvm.add %rowoff_945, %coloff_1001 : i64
    %p_1006 = llvm.getelementptr %c_base_550[%v_1005] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1004, %p_1006 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk8
  ^sk8:
    %ok_1007 = llvm.and %rowok_944, %colok_1000 : i1
    llvm.cond_br %ok_1007, ^st9, ^sk9
  ^st9:
    %x_1008 = llvm.extractvalue %e_acc[10] : !acc
    %b_1009 = llvm.fptrunc %x_1008 : f32 to bf16
    %v_1010 = llvm.add %rowoff_946, %coloff_1001 : i64
    %p_1011 = llvm.getelementptr %c_base_550[%v_1010] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1009, %p_1011 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk9
  ^sk9:
    %col_1012 = llvm.add %col0_64_534, %c17_i64 : i64
    %colok_1013 = llvm.icmp "ult" %col_1012, %c_size1 : i64
    %coloff_1014 = llvm.mul %col_1012, %c_stride1 : i64
    %ok_1015 = llvm.and %rowok_943, %colok_1013 : i1
    llvm.cond_br %ok_1015, ^st10, ^sk10
  ^st10:
    %x_1016 = llvm.extractvalue %e_acc[9] : !acc
    %b_1017 = llvm.fptrunc %x_1016 : f32 to bf16
    %v_1018 = llvm.add %rowoff_945, %coloff_1014 : i64
    %p_1019 = llvm.getelementptr %c_base_550[%v_1018] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1017, %p_1019 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk10
  ^sk10:
    %ok_1020 = llvm.and %rowok_944, %colok_1013 : i1
    llvm.cond_br %ok_1020, ^st11, ^sk11
  ^st11:
    %x_1021 = llvm.extractvalue %e_acc[11] : !acc
    %b_1022 = llvm.fptrunc %x_1021 : f32 to bf16
    %v_1023 = llvm.add %rowoff_946, %coloff_1014 : i64
    %p_1024 = llvm.getelementptr %c_base_550[%v_1023] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1022, %p_1024 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk11
  ^sk11:
    %col_1025 = llvm.add %col0_64_534, %c24_i64 : i64
    %colok_1026 = llvm.icmp "ult" %col_1025, %c_size1 : i64
    %coloff_1027 = llvm.mul %col_1025, %c_stride1 : i64
    %ok_1028 = llvm.and %rowok_943, %colok_1026 : i1
    llvm.cond_br %ok_1028, ^st12, ^sk12
  ^st12:
    %x_1029 = llvm.extractvalue %e_acc[12] : !acc
    %b_1030 = llvm.fptrunc %x_1029 : f32 to bf16
    %v_1031 = llvm.add %rowoff_945, %coloff_1027 : i64
    %p_1032 = llvm.getelementptr %c_base_550[%v_1031] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1030, %p_1032 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk12
  ^sk12:
    %ok_1033 = llvm.and %rowok_944, %colok_1026 : i1
    llvm.cond_br %ok_1033, ^st13, ^sk13
  ^st13:
    %x_1034 = llvm.extractvalue %e_acc[14] : !acc
    %b_1035 = llvm.fptrunc %x_1034 : f32 to bf16
    %v_1036 = llvm.add %rowoff_946, %coloff_1027 : i64
    %p_1037 = llvm.getelementptr %c_base_550[%v_1036] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1035, %p_1037 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk13
  ^sk13:
    %col_1038 = llvm.add %col0_64_534, %c25_i64 : i64
    %colok_1039 = llvm.icmp "ult" %col_1038, %c_size1 : i64
    %coloff_1040 = llvm.mul %col_1038, %c_stride1 : i64
    %ok_1041 = llvm.and %rowok_943, %colok_1039 : i1
    llvm.cond_br %ok_1041, ^st14, ^sk14
  ^st14:
    %x_1042 = llvm.extractvalue %e_acc[13] : !acc
    %b_1043 = llvm.fptrunc %x_1042 : f32 to bf16
    %v_1044 = llvm.add %rowoff_945, %coloff_1040 : i64
    %p_1045 = llvm.getelementptr %c_base_550[%v_1044] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1043, %p_1045 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk14
  ^sk14:
    %ok_1046 = llvm.and %rowok_944, %colok_1039 : i1
    llvm.cond_br %ok_1046, ^st15, ^sk15
  ^st15:
    %x_1047 = llvm.extractvalue %e_acc[15] : !acc
    %b_1048 = llvm.fptrunc %x_1047 : f32 to bf16
    %v_1049 = llvm.add %rowoff_946, %coloff_1040 : i64
    %p_1050 = llvm.getelementptr %c_base_550[%v_1049] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1048, %p_1050 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk15
  ^sk15:
    %col_1051 = llvm.add %col0_64_534, %c32_i64 : i64
    %colok_1052 = llvm.icmp "ult" %col_1051, %c_size1 : i64
    %coloff_1053 = llvm.mul %col_1051, %c_stride1 : i64
    %ok_1054 = llvm.and %rowok_943, %colok_1052 : i1
    llvm.cond_br %ok_1054, ^st16, ^sk16
  ^st16:
    %x_1055 = llvm.extractvalue %e_acc[16] : !acc
    %b_1056 = llvm.fptrunc %x_1055 : f32 to bf16
    %v_1057 = llvm.add %rowoff_945, %coloff_1053 : i64
    %p_1058 = llvm.getelementptr %c_base_550[%v_1057] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1056, %p_1058 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk16
  ^sk16:
    %ok_1059 = llvm.and %rowok_944, %colok_1052 : i1
    llvm.cond_br %ok_1059, ^st17, ^sk17
  ^st17:
    %x_1060 = llvm.extractvalue %e_acc[18] : !acc
    %b_1061 = llvm.fptrunc %x_1060 : f32 to bf16
    %v_1062 = llvm.add %rowoff_946, %coloff_1053 : i64
    %p_1063 = llvm.getelementptr %c_base_550[%v_1062] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1061, %p_1063 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk17
  ^sk17:
    %col_1064 = llvm.add %col0_64_534, %c33_i64 : i64
    %colok_1065 = llvm.icmp "ult" %col_1064, %c_size1 : i64
    %coloff_1066 = llvm.mul %col_1064, %c_stride1 : i64
    %ok_1067 = llvm.and %rowok_943, %colok_1065 : i1
    llvm.cond_br %ok_1067, ^st18, ^sk18
  ^st18:
    %x_1068 = llvm.extractvalue %e_acc[17] : !acc
    %b_1069 = llvm.fptrunc %x_1068 : f32 to bf16
    %v_1070 = llvm.add %rowoff_945, %coloff_1066 : i64
    %p_1071 = llvm.getelementptr %c_base_550[%v_1070] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1069, %p_1071 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk18
  ^sk18:
    %ok_1072 = llvm.and %rowok_944, %colok_1065 : i1
    llvm.cond_br %ok_1072, ^st19, ^sk19
  ^st19:
    %x_1073 = llvm.extractvalue %e_acc[19] : !acc
    %b_1074 = llvm.fptrunc %x_1073 : f32 to bf16
    %v_1075 = llvm.add %rowoff_946, %coloff_1066 : i64
    %p_1076 = llvm.getelementptr %c_base_550[%v_1075] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1074, %p_1076 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk19
  ^sk19:
    %col_1077 = llvm.add %col0_64_534, %c40_i64 : i64
    %colok_1078 = llvm.icmp "ult" %col_1077, %c_size1 : i64
    %coloff_1079 = llvm.mul %col_1077, %c_stride1 : i64
    %ok_1080 = llvm.and %rowok_943, %colok_1078 : i1
    llvm.cond_br %ok_1080, ^st20, ^sk20
  ^st20:
    %x_1081 = llvm.extractvalue %e_acc[20] : !acc
    %b_1082 = llvm.fptrunc %x_1081 : f32 to bf16
    %v_1083 = llvm.add %rowoff_945, %coloff_1079 : i64
    %p_1084 = llvm.getelementptr %c_base_550[%v_1083] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1082, %p_1084 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk20
  ^sk20:
    %ok_1085 = llvm.and %rowok_944, %colok_1078 : i1
    llvm.cond_br %ok_1085, ^st21, ^sk21
  ^st21:
    %x_1086 = llvm.extractvalue %e_acc[22] : !acc
    %b_1087 = llvm.fptrunc %x_1086 : f32 to bf16
    %v_1088 = llvm.add %rowoff_946, %coloff_1079 : i64
    %p_1089 = llvm.getelementptr %c_base_550[%v_1088] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1087, %p_1089 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk21
  ^sk21:
    %col_1090 = llvm.add %col0_64_534, %c41_i64 : i64
    %colok_1091 = llvm.icmp "ult" %col_1090, %c_size1 : i64
    %coloff_1092 = llvm.mul %col_1090, %c_stride1 : i64
    %ok_1093 = llvm.and %rowok_943, %colok_1091 : i1
    llvm.cond_br %ok_1093, ^st22, ^sk22
  ^st22:
    %x_1094 = llvm.extractvalue %e_acc[21] : !acc
    %b_1095 = llvm.fptrunc %x_1094 : f32 to bf16
    %v_1096 = llvm.add %rowoff_945, %coloff_1092 : i64
    %p_1097 = llvm.getelementptr %c_base_550[%v_1096] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1095, %p_1097 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk22
  ^sk22:
    %ok_1098 = llvm.and %rowok_944, %colok_1091 : i1
    llvm.cond_br %ok_1098, ^st23, ^sk23
  ^st23:
    %x_1099 = llvm.extractvalue %e_acc[23] : !acc
    %b_1100 = llvm.fptrunc %x_1099 : f32 to bf16
    %v_1101 = llvm.add %rowoff_946, %coloff_1092 : i64
    %p_1102 = llvm.getelementptr %c_base_550[%v_1101] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1100, %p_1102 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk23
  ^sk23:
    %col_1103 = llvm.add %col0_64_534, %c48_i64 : i64
    %colok_1104 = llvm.icmp "ult" %col_1103, %c_size1 : i64
    %coloff_1105 = llvm.mul %col_1103, %c_stride1 : i64
    %ok_1106 = llvm.and %rowok_943, %colok_1104 : i1
    llvm.cond_br %ok_1106, ^st24, ^sk24
  ^st24:
    %x_1107 = llvm.extractvalue %e_acc[24] : !acc
    %b_1108 = llvm.fptrunc %x_1107 : f32 to bf16
    %v_1109 = llvm.add %rowoff_945, %coloff_1105 : i64
    %p_1110 = llvm.getelementptr %c_base_550[%v_1109] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1108, %p_1110 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk24
  ^sk24:
    %ok_1111 = llvm.and %rowok_944, %colok_1104 : i1
    llvm.cond_br %ok_1111, ^st25, ^sk25
  ^st25:
    %x_1112 = llvm.extractvalue %e_acc[26] : !acc
    %b_1113 = llvm.fptrunc %x_1112 : f32 to bf16
    %v_1114 = llvm.add %rowoff_946, %coloff_1105 : i64
    %p_1115 = llvm.getelementptr %c_base_550[%v_1114] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1113, %p_1115 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk25
  ^sk25:
    %col_1116 = llvm.add %col0_64_534, %c49_i64 : i64
    %colok_1117 = llvm.icmp "ult" %col_1116, %c_size1 : i64
    %coloff_1118 = llvm.mul %col_1116, %c_stride1 : i64
    %ok_1119 = llvm.and %rowok_943, %colok_1117 : i1
    llvm.cond_br %ok_1119, ^st26, ^sk26
  ^st26:
    %x_1120 = llvm.extractvalue %e_acc[25] : !acc
    %b_1121 = llvm.fptrunc %x_1120 : f32 to bf16
    %v_1122 = llvm.add %rowoff_945, %coloff_1118 : i64
    %p_1123 = llvm.getelementptr %c_base_550[%v_1122] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1121, %p_1123 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk26
  ^sk26:
    %ok_1124 = llvm.and %rowok_944, %colok_1117 : i1
    llvm.cond_br %ok_1124, ^st27, ^sk27
  ^st27:
    %x_1125 = llvm.extractvalue %e_acc[27] : !acc
    %b_1126 = llvm.fptrunc %x_1125 : f32 to bf16
    %v_1127 = llvm.add %rowoff_946, %coloff_1118 : i64
    %p_1128 = llvm.getelementptr %c_base_550[%v_1127] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1126, %p_1128 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk27
  ^sk27:
    %col_1129 = llvm.add %col0_64_534, %c56_i64 : i64
    %colok_1130 = llvm.icmp "ult" %col_1129, %c_size1 : i64
    %coloff_1131 = llvm.mul %col_1129, %c_stride1 : i64
    %ok_1132 = llvm.and %rowok_943, %colok_1130 : i1
    llvm.cond_br %ok_1132, ^st28, ^sk28
  ^st28:
    %x_1133 = llvm.extractvalue %e_acc[28] : !acc
    %b_1134 = llvm.fptrunc %x_1133 : f32 to bf16
    %v_1135 = llvm.add %rowoff_945, %coloff_1131 : i64
    %p_1136 = llvm.getelementptr %c_base_550[%v_1135] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1134, %p_1136 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk28
  ^sk28:
    %ok_1137 = llvm.and %rowok_944, %colok_1130 : i1
    llvm.cond_br %ok_1137, ^st29, ^sk29
  ^st29:
    %x_1138 = llvm.extractvalue %e_acc[30] : !acc
    %b_1139 = llvm.fptrunc %x_1138 : f32 to bf16
    %v_1140 = llvm.add %rowoff_946, %coloff_1131 : i64
    %p_1141 = llvm.getelementptr %c_base_550[%v_1140] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1139, %p_1141 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk29
  ^sk29:
    %col_1142 = llvm.add %col0_64_534, %c57_i64 : i64
    %colok_1143 = llvm.icmp "ult" %col_1142, %c_size1 : i64
    %coloff_1144 = llvm.mul %col_1142, %c_stride1 : i64
    %ok_1145 = llvm.and %rowok_943, %colok_1143 : i1
    llvm.cond_br %ok_1145, ^st30, ^sk30
  ^st30:
    %x_1146 = llvm.extractvalue %e_acc[29] : !acc
    %b_1147 = llvm.fptrunc %x_1146 : f32 to bf16
    %v_1148 = llvm.add %rowoff_945, %coloff_1144 : i64
    %p_1149 = llvm.getelementptr %c_base_550[%v_1148] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1147, %p_1149 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk30
  ^sk30:
    %ok_1150 = llvm.and %rowok_944, %colok_1143 : i1
    llvm.cond_br %ok_1150, ^st31, ^sk31
  ^st31:
    %x_1151 = llvm.extractvalue %e_acc[31] : !acc
    %b_1152 = llvm.fptrunc %x_1151 : f32 to bf16
    %v_1153 = llvm.add %rowoff_946, %coloff_1144 : i64
    %p_1154 = llvm.getelementptr %c_base_550[%v_1153] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1152, %p_1154 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk31
  ^sk31:
    %col_1155 = llvm.add %col0_64_534, %c64_i64 : i64
    %colok_1156 = llvm.icmp "ult" %col_1155, %c_size1 : i64
    %coloff_1157 = llvm.mul %col_1155, %c_stride1 : i64
    %ok_1158 = llvm.and %rowok_943, %colok_1156 : i1
    llvm.cond_br %ok_1158, ^st32, ^sk32
  ^st32:
    %x_1159 = llvm.extractvalue %e_acc[32] : !acc
    %b_1160 = llvm.fptrunc %x_1159 : f32 to bf16
    %v_1161 = llvm.add %rowoff_945, %coloff_1157 : i64
    %p_1162 = llvm.getelementptr %c_base_550[%v_1161] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1160, %p_1162 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk32
  ^sk32:
    %ok_1163 = llvm.and %rowok_944, %colok_1156 : i1
    llvm.cond_br %ok_1163, ^st33, ^sk33
  ^st33:
    %x_1164 = llvm.extractvalue %e_acc[34] : !acc
    %b_1165 = llvm.fptrunc %x_1164 : f32 to bf16
    %v_1166 = llvm.add %rowoff_946, %coloff_1157 : i64
    %p_1167 = llvm.getelementptr %c_base_550[%v_1166] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1165, %p_1167 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk33
  ^sk33:
    %col_1168 = llvm.add %col0_64_534, %c65_i64 : i64
    %colok_1169 = llvm.icmp "ult" %col_1168, %c_size1 : i64
    %coloff_1170 = llvm.mul %col_1168, %c_stride1 : i64
    %ok_1171 = llvm.and %rowok_943, %colok_1169 : i1
    llvm.cond_br %ok_1171, ^st34, ^sk34
  ^st34:
    %x_1172 = llvm.extractvalue %e_acc[33] : !acc
    %b_1173 = llvm.fptrunc %x_1172 : f32 to bf16
    %v_1174 = llvm.add %rowoff_945, %coloff_1170 : i64
    %p_1175 = llvm.getelementptr %c_base_550[%v_1174] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1173, %p_1175 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk34
  ^sk34:
    %ok_1176 = llvm.and %rowok_944, %colok_1169 : i1
    llvm.cond_br %ok_1176, ^st35, ^sk35
  ^st35:
    %x_1177 = llvm.extractvalue %e_acc[35] : !acc
    %b_1178 = llvm.fptrunc %x_1177 : f32 to bf16
    %v_1179 = llvm.add %rowoff_946, %coloff_1170 : i64
    %p_1180 = llvm.getelementptr %c_base_550[%v_1179] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1178, %p_1180 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk35
  ^sk35:
    %col_1181 = llvm.add %col0_64_534, %c72_i64 : i64
    %colok_1182 = llvm.icmp "ult" %col_1181, %c_size1 : i64
    %coloff_1183 = llvm.mul %col_1181, %c_stride1 : i64
    %ok_1184 = llvm.and %rowok_943, %colok_1182 : i1
    llvm.cond_br %ok_1184, ^st36, ^sk36
  ^st36:
    %x_1185 = llvm.extractvalue %e_acc[36] : !acc
    %b_1186 = llvm.fptrunc %x_1185 : f32 to bf16
    %v_1187 = llvm.add %rowoff_945, %coloff_1183 : i64
    %p_1188 = llvm.getelementptr %c_base_550[%v_1187] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1186, %p_1188 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk36
  ^sk36:
    %ok_1189 = llvm.and %rowok_944, %colok_1182 : i1
    llvm.cond_br %ok_1189, ^st37, ^sk37
  ^st37:
    %x_1190 = llvm.extractvalue %e_acc[38] : !acc
    %b_1191 = llvm.fptrunc %x_1190 : f32 to bf16
    %v_1192 = llvm.add %rowoff_946, %coloff_1183 : i64
    %p_1193 = llvm.getelementptr %c_base_550[%v_1192] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1191, %p_1193 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk37
  ^sk37:
    %col_1194 = llvm.add %col0_64_534, %c73_i64 : i64
    %colok_1195 = llvm.icmp "ult" %col_1194, %c_size1 : i64
    %coloff_1196 = llvm.mul %col_1194, %c_stride1 : i64
    %ok_1197 = llvm.and %rowok_943, %colok_1195 : i1
    llvm.cond_br %ok_1197, ^st38, ^sk38
  ^st38:
    %x_1198 = llvm.extractvalue %e_acc[37] : !acc
    %b_1199 = llvm.fptrunc %x_1198 : f32 to bf16
    %v_1200 = llvm.add %rowoff_945, %coloff_1196 : i64
    %p_1201 = llvm.getelementptr %c_base_550[%v_1200] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1199, %p_1201 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk38
  ^sk38:
    %ok_1202 = llvm.and %rowok_944, %colok_1195 : i1
    llvm.cond_br %ok_1202, ^st39, ^sk39
  ^st39:
    %x_1203 = llvm.extractvalue %e_acc[39] : !acc
    %b_1204 = llvm.fptrunc %x_1203 : f32 to bf16
    %v_1205 = llvm.add %rowoff_946, %coloff_1196 : i64
    %p_1206 = llvm.getelementptr %c_base_550[%v_1205] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1204, %p_1206 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk39
  ^sk39:
    %col_1207 = llvm.add %col0_64_534, %c80_i64 : i64
    %colok_1208 = llvm.icmp "ult" %col_1207, %c_size1 : i64
    %coloff_1209 = llvm.mul %col_1207, %c_stride1 : i64
    %ok_1210 = llvm.and %rowok_943, %colok_1208 : i1
    llvm.cond_br %ok_1210, ^st40, ^sk40
  ^st40:
    %x_1211 = llvm.extractvalue %e_acc[40] : !acc
    %b_1212 = llvm.fptrunc %x_1211 : f32 to bf16
    %v_1213 = llvm.add %rowoff_945, %coloff_1209 : i64
    %p_1214 = llvm.getelementptr %c_base_550[%v_1213] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1212, %p_1214 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk40
  ^sk40:
    %ok_1215 = llvm.and %rowok_944, %colok_1208 : i1
    llvm.cond_br %ok_1215, ^st41, ^sk41
  ^st41:
    %x_1216 = llvm.extractvalue %e_acc[42] : !acc
    %b_1217 = llvm.fptrunc %x_1216 : f32 to bf16
    %v_1218 = llvm.add %rowoff_946, %coloff_1209 : i64
    %p_1219 = llvm.getelementptr %c_base_550[%v_1218] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1217, %p_1219 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk41
  ^sk41:
    %col_1220 = llvm.add %col0_64_534, %c81_i64 : i64
    %colok_1221 = llvm.icmp "ult" %col_1220, %c_size1 : i64
    %coloff_1222 = llvm.mul %col_1220, %c_stride1 : i64
    %ok_1223 = llvm.and %rowok_943, %colok_1221 : i1
    llvm.cond_br %ok_1223, ^st42, ^sk42
  ^st42:
    %x_1224 = llvm.extractvalue %e_acc[41] : !acc
    %b_1225 = llvm.fptrunc %x_1224 : f32 to bf16
    %v_1226 = llvm.add %rowoff_945, %coloff_1222 : i64
    %p_1227 = llvm.getelementptr %c_base_550[%v_1226] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1225, %p_1227 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk42
  ^sk42:
    %ok_1228 = llvm.and %rowok_944, %colok_1221 : i1
    llvm.cond_br %ok_1228, ^st43, ^sk43
  ^st43:
    %x_1229 = llvm.extractvalue %e_acc[43] : !acc
    %b_1230 = llvm.fptrunc %x_1229 : f32 to bf16
    %v_1231 = llvm.add %rowoff_946, %coloff_1222 : i64
    %p_1232 = llvm.getelementptr %c_base_550[%v_1231] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1230, %p_1232 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk43
  ^sk43:
    %col_1233 = llvm.add %col0_64_534, %c88_i64 : i64
    %colok_1234 = llvm.icmp "ult" %col_1233, %c_size1 : i64
    %coloff_1235 = llvm.mul %col_1233, %c_stride1 : i64
    %ok_1236 = llvm.and %rowok_943, %colok_1234 : i1
    llvm.cond_br %ok_1236, ^st44, ^sk44
  ^st44:
    %x_1237 = llvm.extractvalue %e_acc[44] : !acc
    %b_1238 = llvm.fptrunc %x_1237 : f32 to bf16
    %v_1239 = llvm.add %rowoff_945, %coloff_1235 : i64
    %p_1240 = llvm.getelementptr %c_base_550[%v_1239] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1238, %p_1240 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk44
  ^sk44:
    %ok_1241 = llvm.and %rowok_944, %colok_1234 : i1
    llvm.cond_br %ok_1241, ^st45, ^sk45
  ^st45:
    %x_1242 = llvm.extractvalue %e_acc[46] : !acc
    %b_1243 = llvm.fptrunc %x_1242 : f32 to bf16
    %v_1244 = llvm.add %rowoff_946, %coloff_1235 : i64
    %p_1245 = llvm.getelementptr %c_base_550[%v_1244] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1243, %p_1245 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk45
  ^sk45:
    %col_1246 = llvm.add %col0_64_534, %c89_i64 : i64
    %colok_1247 = llvm.icmp "ult" %col_1246, %c_size1 : i64
    %coloff_1248 = llvm.mul %col_1246, %c_stride1 : i64
    %ok_1249 = llvm.and %rowok_943, %colok_1247 : i1
    llvm.cond_br %ok_1249, ^st46, ^sk46
  ^st46:
    %x_1250 = llvm.extractvalue %e_acc[45] : !acc
    %b_1251 = llvm.fptrunc %x_1250 : f32 to bf16
    %v_1252 = llvm.add %rowoff_945, %coloff_1248 : i64
    %p_1253 = llvm.getelementptr %c_base_550[%v_1252] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1251, %p_1253 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk46
  ^sk46:
    %ok_1254 = llvm.and %rowok_944, %colok_1247 : i1
    llvm.cond_br %ok_1254, ^st47, ^sk47
  ^st47:
    %x_1255 = llvm.extractvalue %e_acc[47] : !acc
    %b_1256 = llvm.fptrunc %x_1255 : f32 to bf16
    %v_1257 = llvm.add %rowoff_946, %coloff_1248 : i64
    %p_1258 = llvm.getelementptr %c_base_550[%v_1257] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1256, %p_1258 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk47
  ^sk47:
    %col_1259 = llvm.add %col0_64_534, %c96_i64 : i64
    %colok_1260 = llvm.icmp "ult" %col_1259, %c_size1 : i64
    %coloff_1261 = llvm.mul %col_1259, %c_stride1 : i64
    %ok_1262 = llvm.and %rowok_943, %colok_1260 : i1
    llvm.cond_br %ok_1262, ^st48, ^sk48
  ^st48:
    %x_1263 = llvm.extractvalue %e_acc[48] : !acc
    %b_1264 = llvm.fptrunc %x_1263 : f32 to bf16
    %v_1265 = llvm.add %rowoff_945, %coloff_1261 : i64
    %p_1266 = llvm.getelementptr %c_base_550[%v_1265] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1264, %p_1266 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk48
  ^sk48:
    %ok_1267 = llvm.and %rowok_944, %colok_1260 : i1
    llvm.cond_br %ok_1267, ^st49, ^sk49
  ^st49:
    %x_1268 = llvm.extractvalue %e_acc[50] : !acc
    %b_1269 = llvm.fptrunc %x_1268 : f32 to bf16
    %v_1270 = llvm.add %rowoff_946, %coloff_1261 : i64
    %p_1271 = llvm.getelementptr %c_base_550[%v_1270] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1269, %p_1271 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk49
  ^sk49:
    %col_1272 = llvm.add %col0_64_534, %c97_i64 : i64
    %colok_1273 = llvm.icmp "ult" %col_1272, %c_size1 : i64
    %coloff_1274 = llvm.mul %col_1272, %c_stride1 : i64
    %ok_1275 = llvm.and %rowok_943, %colok_1273 : i1
    llvm.cond_br %ok_1275, ^st50, ^sk50
  ^st50:
    %x_1276 = llvm.extractvalue %e_acc[49] : !acc
    %b_1277 = llvm.fptrunc %x_1276 : f32 to bf16
    %v_1278 = llvm.add %rowoff_945, %coloff_1274 : i64
    %p_1279 = llvm.getelementptr %c_base_550[%v_1278] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1277, %p_1279 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk50
  ^sk50:
    %ok_1280 = llvm.and %rowok_944, %colok_1273 : i1
    llvm.cond_br %ok_1280, ^st51, ^sk51
  ^st51:
    %x_1281 = llvm.extractvalue %e_acc[51] : !acc
    %b_1282 = llvm.fptrunc %x_1281 : f32 to bf16
    %v_1283 = llvm.add %rowoff_946, %coloff_1274 : i64
    %p_1284 = llvm.getelementptr %c_base_550[%v_1283] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1282, %p_1284 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk51
  ^sk51:
    %col_1285 = llvm.add %col0_64_534, %c104_i64 : i64
    %colok_1286 = llvm.icmp "ult" %col_1285, %c_size1 : i64
    %coloff_1287 = llvm.mul %col_1285, %c_stride1 : i64
    %ok_1288 = llvm.and %rowok_943, %colok_1286 : i1
    llvm.cond_br %ok_1288, ^st52, ^sk52
  ^st52:
    %x_1289 = llvm.extractvalue %e_acc[52] : !acc
    %b_1290 = llvm.fptrunc %x_1289 : f32 to bf16
    %v_1291 = llvm.add %rowoff_945, %coloff_1287 : i64
    %p_1292 = llvm.getelementptr %c_base_550[%v_1291] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1290, %p_1292 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk52
  ^sk52:
    %ok_1293 = llvm.and %rowok_944, %colok_1286 : i1
    llvm.cond_br %ok_1293, ^st53, ^sk53
  ^st53:
    %x_1294 = llvm.extractvalue %e_acc[54] : !acc
    %b_1295 = llvm.fptrunc %x_1294 : f32 to bf16
    %v_1296 = llvm.add %rowoff_946, %coloff_1287 : i64
    %p_1297 = llvm.getelementptr %c_base_550[%v_1296] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1295, %p_1297 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk53
  ^sk53:
    %col_1298 = llvm.add %col0_64_534, %c105_i64 : i64
    %colok_1299 = llvm.icmp "ult" %col_1298, %c_size1 : i64
    %coloff_1300 = llvm.mul %col_1298, %c_stride1 : i64
    %ok_1301 = llvm.and %rowok_943, %colok_1299 : i1
    llvm.cond_br %ok_1301, ^st54, ^sk54
  ^st54:
    %x_1302 = llvm.extractvalue %e_acc[53] : !acc
    %b_1303 = llvm.fptrunc %x_1302 : f32 to bf16
    %v_1304 = llvm.add %rowoff_945, %coloff_1300 : i64
    %p_1305 = llvm.getelementptr %c_base_550[%v_1304] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1303, %p_1305 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk54
  ^sk54:
    %ok_1306 = llvm.and %rowok_944, %colok_1299 : i1
    llvm.cond_br %ok_1306, ^st55, ^sk55
  ^st55:
    %x_1307 = llvm.extractvalue %e_acc[55] : !acc
    %b_1308 = llvm.fptrunc %x_1307 : f32 to bf16
    %v_1309 = llvm.add %rowoff_946, %coloff_1300 : i64
    %p_1310 = llvm.getelementptr %c_base_550[%v_1309] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1308, %p_1310 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk55
  ^sk55:
    %col_1311 = llvm.add %col0_64_534, %c112_i64 : i64
    %colok_1312 = llvm.icmp "ult" %col_1311, %c_size1 : i64
    %coloff_1313 = llvm.mul %col_1311, %c_stride1 : i64
    %ok_1314 = llvm.and %rowok_943, %colok_1312 : i1
    llvm.cond_br %ok_1314, ^st56, ^sk56
  ^st56:
    %x_1315 = llvm.extractvalue %e_acc[56] : !acc
    %b_1316 = llvm.fptrunc %x_1315 : f32 to bf16
    %v_1317 = llvm.add %rowoff_945, %coloff_1313 : i64
    %p_1318 = llvm.getelementptr %c_base_550[%v_1317] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1316, %p_1318 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk56
  ^sk56:
    %ok_1319 = llvm.and %rowok_944, %colok_1312 : i1
    llvm.cond_br %ok_1319, ^st57, ^sk57
  ^st57:
    %x_1320 = llvm.extractvalue %e_acc[58] : !acc
    %b_1321 = llvm.fptrunc %x_1320 : f32 to bf16
    %v_1322 = llvm.add %rowoff_946, %coloff_1313 : i64
    %p_1323 = llvm.getelementptr %c_base_550[%v_1322] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1321, %p_1323 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk57
  ^sk57:
    %col_1324 = llvm.add %col0_64_534, %c113_i64 : i64
    %colok_1325 = llvm.icmp "ult" %col_1324, %c_size1 : i64
    %coloff_1326 = llvm.mul %col_1324, %c_stride1 : i64
    %ok_1327 = llvm.and %rowok_943, %colok_1325 : i1
    llvm.cond_br %ok_1327, ^st58, ^sk58
  ^st58:
    %x_1328 = llvm.extractvalue %e_acc[57] : !acc
    %b_1329 = llvm.fptrunc %x_1328 : f32 to bf16
    %v_1330 = llvm.add %rowoff_945, %coloff_1326 : i64
    %p_1331 = llvm.getelementptr %c_base_550[%v_1330] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1329, %p_1331 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk58
  ^sk58:
    %ok_1332 = llvm.and %rowok_944, %colok_1325 : i1
    llvm.cond_br %ok_1332, ^st59, ^sk59
  ^st59:
    %x_1333 = llvm.extractvalue %e_acc[59] : !acc
    %b_1334 = llvm.fptrunc %x_1333 : f32 to bf16
    %v_1335 = llvm.add %rowoff_946, %coloff_1326 : i64
    %p_1336 = llvm.getelementptr %c_base_550[%v_1335] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1334, %p_1336 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk59
  ^sk59:
    %col_1337 = llvm.add %col0_64_534, %c120_i64 : i64
    %colok_1338 = llvm.icmp "ult" %col_1337, %c_size1 : i64
    %coloff_1339 = llvm.mul %col_1337, %c_stride1 : i64
    %ok_1340 = llvm.and %rowok_943, %colok_1338 : i1
    llvm.cond_br %ok_1340, ^st60, ^sk60
  ^st60:
    %x_1341 = llvm.extractvalue %e_acc[60] : !acc
    %b_1342 = llvm.fptrunc %x_1341 : f32 to bf16
    %v_1343 = llvm.add %rowoff_945, %coloff_1339 : i64
    %p_1344 = llvm.getelementptr %c_base_550[%v_1343] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1342, %p_1344 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk60
  ^sk60:
    %ok_1345 = llvm.and %rowok_944, %colok_1338 : i1
    llvm.cond_br %ok_1345, ^st61, ^sk61
  ^st61:
    %x_1346 = llvm.extractvalue %e_acc[62] : !acc
    %b_1347 = llvm.fptrunc %x_1346 : f32 to bf16
    %v_1348 = llvm.add %rowoff_946, %coloff_1339 : i64
    %p_1349 = llvm.getelementptr %c_base_550[%v_1348] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1347, %p_1349 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk61
  ^sk61:
    %col_1350 = llvm.add %col0_64_534, %c121_i64 : i64
    %colok_1351 = llvm.icmp "ult" %col_1350, %c_size1 : i64
    %coloff_1352 = llvm.mul %col_1350, %c_stride1 : i64
    %ok_1353 = llvm.and %rowok_943, %colok_1351 : i1
    llvm.cond_br %ok_1353, ^st62, ^sk62
  ^st62:
    %x_1354 = llvm.extractvalue %e_acc[61] : !acc
    %b_1355 = llvm.fptrunc %x_1354 : f32 to bf16
    %v_1356 = llvm.add %rowoff_945, %coloff_1352 : i64
    %p_1357 = llvm.getelementptr %c_base_550[%v_1356] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1355, %p_1357 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk62
  ^sk62:
    %ok_1358 = llvm.and %rowok_944, %colok_1351 : i1
    llvm.cond_br %ok_1358, ^st63, ^sk63
  ^st63:
    %x_1359 = llvm.extractvalue %e_acc[63] : !acc
    %b_1360 = llvm.fptrunc %x_1359 : f32 to bf16
    %v_1361 = llvm.add %rowoff_946, %coloff_1352 : i64
    %p_1362 = llvm.getelementptr %c_base_550[%v_1361] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1360, %p_1362 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk63
  ^sk63:
    %col_1363 = llvm.add %col0_64_534, %c128_i64 : i64
    %colok_1364 = llvm.icmp "ult" %col_1363, %c_size1 : i64
    %coloff_1365 = llvm.mul %col_1363, %c_stride1 : i64
    %ok_1366 = llvm.and %rowok_943, %colok_1364 : i1
    llvm.cond_br %ok_1366, ^st64, ^sk64
  ^st64:
    %x_1367 = llvm.extractvalue %e_acc[64] : !acc
    %b_1368 = llvm.fptrunc %x_1367 : f32 to bf16
    %v_1369 = llvm.add %rowoff_945, %coloff_1365 : i64
    %p_1370 = llvm.getelementptr %c_base_550[%v_1369] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1368, %p_1370 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk64
  ^sk64:
    %ok_1371 = llvm.and %rowok_944, %colok_1364 : i1
    llvm.cond_br %ok_1371, ^st65, ^sk65
  ^st65:
    %x_1372 = llvm.extractvalue %e_acc[66] : !acc
    %b_1373 = llvm.fptrunc %x_1372 : f32 to bf16
    %v_1374 = llvm.add %rowoff_946, %coloff_1365 : i64
    %p_1375 = llvm.getelementptr %c_base_550[%v_1374] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1373, %p_1375 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk65
  ^sk65:
    %col_1376 = llvm.add %col0_64_534, %c129_i64 : i64
    %colok_1377 = llvm.icmp "ult" %col_1376, %c_size1 : i64
    %coloff_1378 = llvm.mul %col_1376, %c_stride1 : i64
    %ok_1379 = llvm.and %rowok_943, %colok_1377 : i1
    llvm.cond_br %ok_1379, ^st66, ^sk66
  ^st66:
    %x_1380 = llvm.extractvalue %e_acc[65] : !acc
    %b_1381 = llvm.fptrunc %x_1380 : f32 to bf16
    %v_1382 = llvm.add %rowoff_945, %coloff_1378 : i64
    %p_1383 = llvm.getelementptr %c_base_550[%v_1382] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1381, %p_1383 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk66
  ^sk66:
    %ok_1384 = llvm.and %rowok_944, %colok_1377 : i1
    llvm.cond_br %ok_1384, ^st67, ^sk67
  ^st67:
    %x_1385 = llvm.extractvalue %e_acc[67] : !acc
    %b_1386 = llvm.fptrunc %x_1385 : f32 to bf16
    %v_1387 = llvm.add %rowoff_946, %coloff_1378 : i64
    %p_1388 = llvm.getelementptr %c_base_550[%v_1387] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1386, %p_1388 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk67
  ^sk67:
    %col_1389 = llvm.add %col0_64_534, %c136_i64 : i64
    %colok_1390 = llvm.icmp "ult" %col_1389, %c_size1 : i64
    %coloff_1391 = llvm.mul %col_1389, %c_stride1 : i64
    %ok_1392 = llvm.and %rowok_943, %colok_1390 : i1
    llvm.cond_br %ok_1392, ^st68, ^sk68
  ^st68:
    %x_1393 = llvm.extractvalue %e_acc[68] : !acc
    %b_1394 = llvm.fptrunc %x_1393 : f32 to bf16
    %v_1395 = llvm.add %rowoff_945, %coloff_1391 : i64
    %p_1396 = llvm.getelementptr %c_base_550[%v_1395] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1394, %p_1396 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk68
  ^sk68:
    %ok_1397 = llvm.and %rowok_944, %colok_1390 : i1
    llvm.cond_br %ok_1397, ^st69, ^sk69
  ^st69:
    %x_1398 = llvm.extractvalue %e_acc[70] : !acc
    %b_1399 = llvm.fptrunc %x_1398 : f32 to bf16
    %v_1400 = llvm.add %rowoff_946, %coloff_1391 : i64
    %p_1401 = llvm.getelementptr %c_base_550[%v_1400] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1399, %p_1401 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk69
  ^sk69:
    %col_1402 = llvm.add %col0_64_534, %c137_i64 : i64
    %colok_1403 = llvm.icmp "ult" %col_1402, %c_size1 : i64
    %coloff_1404 = llvm.mul %col_1402, %c_stride1 : i64
    %ok_1405 = llvm.and %rowok_943, %colok_1403 : i1
    llvm.cond_br %ok_1405, ^st70, ^sk70
  ^st70:
    %x_1406 = llvm.extractvalue %e_acc[69] : !acc
    %b_1407 = llvm.fptrunc %x_1406 : f32 to bf16
    %v_1408 = llvm.add %rowoff_945, %coloff_1404 : i64
    %p_1409 = llvm.getelementptr %c_base_550[%v_1408] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1407, %p_1409 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk70
  ^sk70:
    %ok_1410 = llvm.and %rowok_944, %colok_1403 : i1
    llvm.cond_br %ok_1410, ^st71, ^sk71
  ^st71:
    %x_1411 = llvm.extractvalue %e_acc[71] : !acc
    %b_1412 = llvm.fptrunc %x_1411 : f32 to bf16
    %v_1413 = llvm.add %rowoff_946, %coloff_1404 : i64
    %p_1414 = llvm.getelementptr %c_base_550[%v_1413] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1412, %p_1414 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk71
  ^sk71:
    %col_1415 = llvm.add %col0_64_534, %c144_i64 : i64
    %colok_1416 = llvm.icmp "ult" %col_1415, %c_size1 : i64
    %coloff_1417 = llvm.mul %col_1415, %c_stride1 : i64
    %ok_1418 = llvm.and %rowok_943, %colok_1416 : i1
    llvm.cond_br %ok_1418, ^st72, ^sk72
  ^st72:
    %x_1419 = llvm.extractvalue %e_acc[72] : !acc
    %b_1420 = llvm.fptrunc %x_1419 : f32 to bf16
    %v_1421 = llvm.add %rowoff_945, %coloff_1417 : i64
    %p_1422 = llvm.getelementptr %c_base_550[%v_1421] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1420, %p_1422 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk72
  ^sk72:
    %ok_1423 = llvm.and %rowok_944, %colok_1416 : i1
    llvm.cond_br %ok_1423, ^st73, ^sk73
  ^st73:
    %x_1424 = llvm.extractvalue %e_acc[74] : !acc
    %b_1425 = llvm.fptrunc %x_1424 : f32 to bf16
    %v_1426 = llvm.add %rowoff_946, %coloff_1417 : i64
    %p_1427 = llvm.getelementptr %c_base_550[%v_1426] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1425, %p_1427 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk73
  ^sk73:
    %col_1428 = llvm.add %col0_64_534, %c145_i64 : i64
    %colok_1429 = llvm.icmp "ult" %col_1428, %c_size1 : i64
    %coloff_1430 = llvm.mul %col_1428, %c_stride1 : i64
    %ok_1431 = llvm.and %rowok_943, %colok_1429 : i1
    llvm.cond_br %ok_1431, ^st74, ^sk74
  ^st74:
    %x_1432 = llvm.extractvalue %e_acc[73] : !acc
    %b_1433 = llvm.fptrunc %x_1432 : f32 to bf16
    %v_1434 = llvm.add %rowoff_945, %coloff_1430 : i64
    %p_1435 = llvm.getelementptr %c_base_550[%v_1434] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1433, %p_1435 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk74
  ^sk74:
    %ok_1436 = llvm.and %rowok_944, %colok_1429 : i1
    llvm.cond_br %ok_1436, ^st75, ^sk75
  ^st75:
    %x_1437 = llvm.extractvalue %e_acc[75] : !acc
    %b_1438 = llvm.fptrunc %x_1437 : f32 to bf16
    %v_1439 = llvm.add %rowoff_946, %coloff_1430 : i64
    %p_1440 = llvm.getelementptr %c_base_550[%v_1439] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1438, %p_1440 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk75
  ^sk75:
    %col_1441 = llvm.add %col0_64_534, %c152_i64 : i64
    %colok_1442 = llvm.icmp "ult" %col_1441, %c_size1 : i64
    %coloff_1443 = llvm.mul %col_1441, %c_stride1 : i64
    %ok_1444 = llvm.and %rowok_943, %colok_1442 : i1
    llvm.cond_br %ok_1444, ^st76, ^sk76
  ^st76:
    %x_1445 = llvm.extractvalue %e_acc[76] : !acc
    %b_1446 = llvm.fptrunc %x_1445 : f32 to bf16
    %v_1447 = llvm.add %rowoff_945, %coloff_1443 : i64
    %p_1448 = llvm.getelementptr %c_base_550[%v_1447] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1446, %p_1448 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk76
  ^sk76:
    %ok_1449 = llvm.and %rowok_944, %colok_1442 : i1
    llvm.cond_br %ok_1449, ^st77, ^sk77
  ^st77:
    %x_1450 = llvm.extractvalue %e_acc[78] : !acc
    %b_1451 = llvm.fptrunc %x_1450 : f32 to bf16
    %v_1452 = llvm.add %rowoff_946, %coloff_1443 : i64
    %p_1453 = llvm.getelementptr %c_base_550[%v_1452] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1451, %p_1453 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk77
  ^sk77:
    %col_1454 = llvm.add %col0_64_534, %c153_i64 : i64
    %colok_1455 = llvm.icmp "ult" %col_1454, %c_size1 : i64
    %coloff_1456 = llvm.mul %col_1454, %c_stride1 : i64
    %ok_1457 = llvm.and %rowok_943, %colok_1455 : i1
    llvm.cond_br %ok_1457, ^st78, ^sk78
  ^st78:
    %x_1458 = llvm.extractvalue %e_acc[77] : !acc
    %b_1459 = llvm.fptrunc %x_1458 : f32 to bf16
    %v_1460 = llvm.add %rowoff_945, %coloff_1456 : i64
    %p_1461 = llvm.getelementptr %c_base_550[%v_1460] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1459, %p_1461 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk78
  ^sk78:
    %ok_1462 = llvm.and %rowok_944, %colok_1455 : i1
    llvm.cond_br %ok_1462, ^st79, ^sk79
  ^st79:
    %x_1463 = llvm.extractvalue %e_acc[79] : !acc
    %b_1464 = llvm.fptrunc %x_1463 : f32 to bf16
    %v_1465 = llvm.add %rowoff_946, %coloff_1456 : i64
    %p_1466 = llvm.getelementptr %c_base_550[%v_1465] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1464, %p_1466 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk79
  ^sk79:
    %col_1467 = llvm.add %col0_64_534, %c160_i64 : i64
    %colok_1468 = llvm.icmp "ult" %col_1467, %c_size1 : i64
    %coloff_1469 = llvm.mul %col_1467, %c_stride1 : i64
    %ok_1470 = llvm.and %rowok_943, %colok_1468 : i1
    llvm.cond_br %ok_1470, ^st80, ^sk80
  ^st80:
    %x_1471 = llvm.extractvalue %e_acc[80] : !acc
    %b_1472 = llvm.fptrunc %x_1471 : f32 to bf16
    %v_1473 = llvm.add %rowoff_945, %coloff_1469 : i64
    %p_1474 = llvm.getelementptr %c_base_550[%v_1473] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1472, %p_1474 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk80
  ^sk80:
    %ok_1475 = llvm.and %rowok_944, %colok_1468 : i1
    llvm.cond_br %ok_1475, ^st81, ^sk81
  ^st81:
    %x_1476 = llvm.extractvalue %e_acc[82] : !acc
    %b_1477 = llvm.fptrunc %x_1476 : f32 to bf16
    %v_1478 = llvm.add %rowoff_946, %coloff_1469 : i64
    %p_1479 = llvm.getelementptr %c_base_550[%v_1478] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1477, %p_1479 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk81
  ^sk81:
    %col_1480 = llvm.add %col0_64_534, %c161_i64 : i64
    %colok_1481 = llvm.icmp "ult" %col_1480, %c_size1 : i64
    %coloff_1482 = llvm.mul %col_1480, %c_stride1 : i64
    %ok_1483 = llvm.and %rowok_943, %colok_1481 : i1
    llvm.cond_br %ok_1483, ^st82, ^sk82
  ^st82:
    %x_1484 = llvm.extractvalue %e_acc[81] : !acc
    %b_1485 = llvm.fptrunc %x_1484 : f32 to bf16
    %v_1486 = llvm.add %rowoff_945, %coloff_1482 : i64
    %p_1487 = llvm.getelementptr %c_base_550[%v_1486] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1485, %p_1487 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk82
  ^sk82:
    %ok_1488 = llvm.and %rowok_944, %colok_1481 : i1
    llvm.cond_br %ok_1488, ^st83, ^sk83
  ^st83:
    %x_1489 = llvm.extractvalue %e_acc[83] : !acc
    %b_1490 = llvm.fptrunc %x_1489 : f32 to bf16
    %v_1491 = llvm.add %rowoff_946, %coloff_1482 : i64
    %p_1492 = llvm.getelementptr %c_base_550[%v_1491] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1490, %p_1492 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk83
  ^sk83:
    %col_1493 = llvm.add %col0_64_534, %c168_i64 : i64
    %colok_1494 = llvm.icmp "ult" %col_1493, %c_size1 : i64
    %coloff_1495 = llvm.mul %col_1493, %c_stride1 : i64
    %ok_1496 = llvm.and %rowok_943, %colok_1494 : i1
    llvm.cond_br %ok_1496, ^st84, ^sk84
  ^st84:
    %x_1497 = llvm.extractvalue %e_acc[84] : !acc
    %b_1498 = llvm.fptrunc %x_1497 : f32 to bf16
    %v_1499 = llvm.add %rowoff_945, %coloff_1495 : i64
    %p_1500 = llvm.getelementptr %c_base_550[%v_1499] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1498, %p_1500 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk84
  ^sk84:
    %ok_1501 = llvm.and %rowok_944, %colok_1494 : i1
    llvm.cond_br %ok_1501, ^st85, ^sk85
  ^st85:
    %x_1502 = llvm.extractvalue %e_acc[86] : !acc
    %b_1503 = llvm.fptrunc %x_1502 : f32 to bf16
    %v_1504 = llvm.add %rowoff_946, %coloff_1495 : i64
    %p_1505 = llvm.getelementptr %c_base_550[%v_1504] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1503, %p_1505 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk85
  ^sk85:
    %col_1506 = llvm.add %col0_64_534, %c169_i64 : i64
    %colok_1507 = llvm.icmp "ult" %col_1506, %c_size1 : i64
    %coloff_1508 = llvm.mul %col_1506, %c_stride1 : i64
    %ok_1509 = llvm.and %rowok_943, %colok_1507 : i1
    llvm.cond_br %ok_1509, ^st86, ^sk86
  ^st86:
    %x_1510 = llvm.extractvalue %e_acc[85] : !acc
    %b_1511 = llvm.fptrunc %x_1510 : f32 to bf16
    %v_1512 = llvm.add %rowoff_945, %coloff_1508 : i64
    %p_1513 = llvm.getelementptr %c_base_550[%v_1512] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1511, %p_1513 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk86
  ^sk86:
    %ok_1514 = llvm.and %rowok_944, %colok_1507 : i1
    llvm.cond_br %ok_1514, ^st87, ^sk87
  ^st87:
    %x_1515 = llvm.extractvalue %e_acc[87] : !acc
    %b_1516 = llvm.fptrunc %x_1515 : f32 to bf16
    %v_1517 = llvm.add %rowoff_946, %coloff_1508 : i64
    %p_1518 = llvm.getelementptr %c_base_550[%v_1517] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1516, %p_1518 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk87
  ^sk87:
    %col_1519 = llvm.add %col0_64_534, %c176_i64 : i64
    %colok_1520 = llvm.icmp "ult" %col_1519, %c_size1 : i64
    %coloff_1521 = llvm.mul %col_1519, %c_stride1 : i64
    %ok_1522 = llvm.and %rowok_943, %colok_1520 : i1
    llvm.cond_br %ok_1522, ^st88, ^sk88
  ^st88:
    %x_1523 = llvm.extractvalue %e_acc[88] : !acc
    %b_1524 = llvm.fptrunc %x_1523 : f32 to bf16
    %v_1525 = llvm.add %rowoff_945, %coloff_1521 : i64
    %p_1526 = llvm.getelementptr %c_base_550[%v_1525] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1524, %p_1526 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk88
  ^sk88:
    %ok_1527 = llvm.and %rowok_944, %colok_1520 : i1
    llvm.cond_br %ok_1527, ^st89, ^sk89
  ^st89:
    %x_1528 = llvm.extractvalue %e_acc[90] : !acc
    %b_1529 = llvm.fptrunc %x_1528 : f32 to bf16
    %v_1530 = llvm.add %rowoff_946, %coloff_1521 : i64
    %p_1531 = llvm.getelementptr %c_base_550[%v_1530] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1529, %p_1531 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk89
  ^sk89:
    %col_1532 = llvm.add %col0_64_534, %c177_i64 : i64
    %colok_1533 = llvm.icmp "ult" %col_1532, %c_size1 : i64
    %coloff_1534 = llvm.mul %col_1532, %c_stride1 : i64
    %ok_1535 = llvm.and %rowok_943, %colok_1533 : i1
    llvm.cond_br %ok_1535, ^st90, ^sk90
  ^st90:
    %x_1536 = llvm.extractvalue %e_acc[89] : !acc
    %b_1537 = llvm.fptrunc %x_1536 : f32 to bf16
    %v_1538 = llvm.add %rowoff_945, %coloff_1534 : i64
    %p_1539 = llvm.getelementptr %c_base_550[%v_1538] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1537, %p_1539 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk90
  ^sk90:
    %ok_1540 = llvm.and %rowok_944, %colok_1533 : i1
    llvm.cond_br %ok_1540, ^st91, ^sk91
  ^st91:
    %x_1541 = llvm.extractvalue %e_acc[91] : !acc
    %b_1542 = llvm.fptrunc %x_1541 : f32 to bf16
    %v_1543 = llvm.add %rowoff_946, %coloff_1534 : i64
    %p_1544 = llvm.getelementptr %c_base_550[%v_1543] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1542, %p_1544 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk91
  ^sk91:
    %col_1545 = llvm.add %col0_64_534, %c184_i64 : i64
    %colok_1546 = llvm.icmp "ult" %col_1545, %c_size1 : i64
    %coloff_1547 = llvm.mul %col_1545, %c_stride1 : i64
    %ok_1548 = llvm.and %rowok_943, %colok_1546 : i1
    llvm.cond_br %ok_1548, ^st92, ^sk92
  ^st92:
    %x_1549 = llvm.extractvalue %e_acc[92] : !acc
    %b_1550 = llvm.fptrunc %x_1549 : f32 to bf16
    %v_1551 = llvm.add %rowoff_945, %coloff_1547 : i64
    %p_1552 = llvm.getelementptr %c_base_550[%v_1551] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1550, %p_1552 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk92
  ^sk92:
    %ok_1553 = llvm.and %rowok_944, %colok_1546 : i1
    llvm.cond_br %ok_1553, ^st93, ^sk93
  ^st93:
    %x_1554 = llvm.extractvalue %e_acc[94] : !acc
    %b_1555 = llvm.fptrunc %x_1554 : f32 to bf16
    %v_1556 = llvm.add %rowoff_946, %coloff_1547 : i64
    %p_1557 = llvm.getelementptr %c_base_550[%v_1556] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1555, %p_1557 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk93
  ^sk93:
    %col_1558 = llvm.add %col0_64_534, %c185_i64 : i64
    %colok_1559 = llvm.icmp "ult" %col_1558, %c_size1 : i64
    %coloff_1560 = llvm.mul %col_1558, %c_stride1 : i64
    %ok_1561 = llvm.and %rowok_943, %colok_1559 : i1
    llvm.cond_br %ok_1561, ^st94, ^sk94
  ^st94:
    %x_1562 = llvm.extractvalue %e_acc[93] : !acc
    %b_1563 = llvm.fptrunc %x_1562 : f32 to bf16
    %v_1564 = llvm.add %rowoff_945, %coloff_1560 : i64
    %p_1565 = llvm.getelementptr %c_base_550[%v_1564] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1563, %p_1565 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk94
  ^sk94:
    %ok_1566 = llvm.and %rowok_944, %colok_1559 : i1
    llvm.cond_br %ok_1566, ^st95, ^sk95
  ^st95:
    %x_1567 = llvm.extractvalue %e_acc[95] : !acc
    %b_1568 = llvm.fptrunc %x_1567 : f32 to bf16
    %v_1569 = llvm.add %rowoff_946, %coloff_1560 : i64
    %p_1570 = llvm.getelementptr %c_base_550[%v_1569] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1568, %p_1570 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk95
  ^sk95:
    %col_1571 = llvm.add %col0_64_534, %c192_i64 : i64
    %colok_1572 = llvm.icmp "ult" %col_1571, %c_size1 : i64
    %coloff_1573 = llvm.mul %col_1571, %c_stride1 : i64
    %ok_1574 = llvm.and %rowok_943, %colok_1572 : i1
    llvm.cond_br %ok_1574, ^st96, ^sk96
  ^st96:
    %x_1575 = llvm.extractvalue %e_acc[96] : !acc
    %b_1576 = llvm.fptrunc %x_1575 : f32 to bf16
    %v_1577 = llvm.add %rowoff_945, %coloff_1573 : i64
    %p_1578 = llvm.getelementptr %c_base_550[%v_1577] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1576, %p_1578 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk96
  ^sk96:
    %ok_1579 = llvm.and %rowok_944, %colok_1572 : i1
    llvm.cond_br %ok_1579, ^st97, ^sk97
  ^st97:
    %x_1580 = llvm.extractvalue %e_acc[98] : !acc
    %b_1581 = llvm.fptrunc %x_1580 : f32 to bf16
    %v_1582 = llvm.add %rowoff_946, %coloff_1573 : i64
    %p_1583 = llvm.getelementptr %c_base_550[%v_1582] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1581, %p_1583 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk97
  ^sk97:
    %col_1584 = llvm.add %col0_64_534, %c193_i64 : i64
    %colok_1585 = llvm.icmp "ult" %col_1584, %c_size1 : i64
    %coloff_1586 = llvm.mul %col_1584, %c_stride1 : i64
    %ok_1587 = llvm.and %rowok_943, %colok_1585 : i1
    llvm.cond_br %ok_1587, ^st98, ^sk98
  ^st98:
    %x_1588 = llvm.extractvalue %e_acc[97] : !acc
    %b_1589 = llvm.fptrunc %x_1588 : f32 to bf16
    %v_1590 = llvm.add %rowoff_945, %coloff_1586 : i64
    %p_1591 = llvm.getelementptr %c_base_550[%v_1590] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1589, %p_1591 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk98
  ^sk98:
    %ok_1592 = llvm.and %rowok_944, %colok_1585 : i1
    llvm.cond_br %ok_1592, ^st99, ^sk99
  ^st99:
    %x_1593 = llvm.extractvalue %e_acc[99] : !acc
    %b_1594 = llvm.fptrunc %x_1593 : f32 to bf16
    %v_1595 = llvm.add %rowoff_946, %coloff_1586 : i64
    %p_1596 = llvm.getelementptr %c_base_550[%v_1595] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1594, %p_1596 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk99
  ^sk99:
    %col_1597 = llvm.add %col0_64_534, %c200_i64 : i64
    %colok_1598 = llvm.icmp "ult" %col_1597, %c_size1 : i64
    %coloff_1599 = llvm.mul %col_1597, %c_stride1 : i64
    %ok_1600 = llvm.and %rowok_943, %colok_1598 : i1
    llvm.cond_br %ok_1600, ^st100, ^sk100
  ^st100:
    %x_1601 = llvm.extractvalue %e_acc[100] : !acc
    %b_1602 = llvm.fptrunc %x_1601 : f32 to bf16
    %v_1603 = llvm.add %rowoff_945, %coloff_1599 : i64
    %p_1604 = llvm.getelementptr %c_base_550[%v_1603] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1602, %p_1604 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk100
  ^sk100:
    %ok_1605 = llvm.and %rowok_944, %colok_1598 : i1
    llvm.cond_br %ok_1605, ^st101, ^sk101
  ^st101:
    %x_1606 = llvm.extractvalue %e_acc[102] : !acc
    %b_1607 = llvm.fptrunc %x_1606 : f32 to bf16
    %v_1608 = llvm.add %rowoff_946, %coloff_1599 : i64
    %p_1609 = llvm.getelementptr %c_base_550[%v_1608] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1607, %p_1609 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk101
  ^sk101:
    %col_1610 = llvm.add %col0_64_534, %c201_i64 : i64
    %colok_1611 = llvm.icmp "ult" %col_1610, %c_size1 : i64
    %coloff_1612 = llvm.mul %col_1610, %c_stride1 : i64
    %ok_1613 = llvm.and %rowok_943, %colok_1611 : i1
    llvm.cond_br %ok_1613, ^st102, ^sk102
  ^st102:
    %x_1614 = llvm.extractvalue %e_acc[101] : !acc
    %b_1615 = llvm.fptrunc %x_1614 : f32 to bf16
    %v_1616 = llvm.add %rowoff_945, %coloff_1612 : i64
    %p_1617 = llvm.getelementptr %c_base_550[%v_1616] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1615, %p_1617 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk102
  ^sk102:
    %ok_1618 = llvm.and %rowok_944, %colok_1611 : i1
    llvm.cond_br %ok_1618, ^st103, ^sk103
  ^st103:
    %x_1619 = llvm.extractvalue %e_acc[103] : !acc
    %b_1620 = llvm.fptrunc %x_1619 : f32 to bf16
    %v_1621 = llvm.add %rowoff_946, %coloff_1612 : i64
    %p_1622 = llvm.getelementptr %c_base_550[%v_1621] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1620, %p_1622 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk103
  ^sk103:
    %col_1623 = llvm.add %col0_64_534, %c208_i64 : i64
    %colok_1624 = llvm.icmp "ult" %col_1623, %c_size1 : i64
    %coloff_1625 = llvm.mul %col_1623, %c_stride1 : i64
    %ok_1626 = llvm.and %rowok_943, %colok_1624 : i1
    llvm.cond_br %ok_1626, ^st104, ^sk104
  ^st104:
    %x_1627 = llvm.extractvalue %e_acc[104] : !acc
    %b_1628 = llvm.fptrunc %x_1627 : f32 to bf16
    %v_1629 = llvm.add %rowoff_945, %coloff_1625 : i64
    %p_1630 = llvm.getelementptr %c_base_550[%v_1629] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1628, %p_1630 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk104
  ^sk104:
    %ok_1631 = llvm.and %rowok_944, %colok_1624 : i1
    llvm.cond_br %ok_1631, ^st105, ^sk105
  ^st105:
    %x_1632 = llvm.extractvalue %e_acc[106] : !acc
    %b_1633 = llvm.fptrunc %x_1632 : f32 to bf16
    %v_1634 = llvm.add %rowoff_946, %coloff_1625 : i64
    %p_1635 = llvm.getelementptr %c_base_550[%v_1634] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1633, %p_1635 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk105
  ^sk105:
    %col_1636 = llvm.add %col0_64_534, %c209_i64 : i64
    %colok_1637 = llvm.icmp "ult" %col_1636, %c_size1 : i64
    %coloff_1638 = llvm.mul %col_1636, %c_stride1 : i64
    %ok_1639 = llvm.and %rowok_943, %colok_1637 : i1
    llvm.cond_br %ok_1639, ^st106, ^sk106
  ^st106:
    %x_1640 = llvm.extractvalue %e_acc[105] : !acc
    %b_1641 = llvm.fptrunc %x_1640 : f32 to bf16
    %v_1642 = llvm.add %rowoff_945, %coloff_1638 : i64
    %p_1643 = llvm.getelementptr %c_base_550[%v_1642] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1641, %p_1643 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk106
  ^sk106:
    %ok_1644 = llvm.and %rowok_944, %colok_1637 : i1
    llvm.cond_br %ok_1644, ^st107, ^sk107
  ^st107:
    %x_1645 = llvm.extractvalue %e_acc[107] : !acc
    %b_1646 = llvm.fptrunc %x_1645 : f32 to bf16
    %v_1647 = llvm.add %rowoff_946, %coloff_1638 : i64
    %p_1648 = llvm.getelementptr %c_base_550[%v_1647] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1646, %p_1648 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk107
  ^sk107:
    %col_1649 = llvm.add %col0_64_534, %c216_i64 : i64
    %colok_1650 = llvm.icmp "ult" %col_1649, %c_size1 : i64
    %coloff_1651 = llvm.mul %col_1649, %c_stride1 : i64
    %ok_1652 = llvm.and %rowok_943, %colok_1650 : i1
    llvm.cond_br %ok_1652, ^st108, ^sk108
  ^st108:
    %x_1653 = llvm.extractvalue %e_acc[108] : !acc
    %b_1654 = llvm.fptrunc %x_1653 : f32 to bf16
    %v_1655 = llvm.add %rowoff_945, %coloff_1651 : i64
    %p_1656 = llvm.getelementptr %c_base_550[%v_1655] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1654, %p_1656 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk108
  ^sk108:
    %ok_1657 = llvm.and %rowok_944, %colok_1650 : i1
    llvm.cond_br %ok_1657, ^st109, ^sk109
  ^st109:
    %x_1658 = llvm.extractvalue %e_acc[110] : !acc
    %b_1659 = llvm.fptrunc %x_1658 : f32 to bf16
    %v_1660 = llvm.add %rowoff_946, %coloff_1651 : i64
    %p_1661 = llvm.getelementptr %c_base_550[%v_1660] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1659, %p_1661 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk109
  ^sk109:
    %col_1662 = llvm.add %col0_64_534, %c217_i64 : i64
    %colok_1663 = llvm.icmp "ult" %col_1662, %c_size1 : i64
    %coloff_1664 = llvm.mul %col_1662, %c_stride1 : i64
    %ok_1665 = llvm.and %rowok_943, %colok_1663 : i1
    llvm.cond_br %ok_1665, ^st110, ^sk110
  ^st110:
    %x_1666 = llvm.extractvalue %e_acc[109] : !acc
    %b_1667 = llvm.fptrunc %x_1666 : f32 to bf16
    %v_1668 = llvm.add %rowoff_945, %coloff_1664 : i64
    %p_1669 = llvm.getelementptr %c_base_550[%v_1668] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1667, %p_1669 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk110
  ^sk110:
    %ok_1670 = llvm.and %rowok_944, %colok_1663 : i1
    llvm.cond_br %ok_1670, ^st111, ^sk111
  ^st111:
    %x_1671 = llvm.extractvalue %e_acc[111] : !acc
    %b_1672 = llvm.fptrunc %x_1671 : f32 to bf16
    %v_1673 = llvm.add %rowoff_946, %coloff_1664 : i64
    %p_1674 = llvm.getelementptr %c_base_550[%v_1673] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1672, %p_1674 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk111
  ^sk111:
    %col_1675 = llvm.add %col0_64_534, %c224_i64 : i64
    %colok_1676 = llvm.icmp "ult" %col_1675, %c_size1 : i64
    %coloff_1677 = llvm.mul %col_1675, %c_stride1 : i64
    %ok_1678 = llvm.and %rowok_943, %colok_1676 : i1
    llvm.cond_br %ok_1678, ^st112, ^sk112
  ^st112:
    %x_1679 = llvm.extractvalue %e_acc[112] : !acc
    %b_1680 = llvm.fptrunc %x_1679 : f32 to bf16
    %v_1681 = llvm.add %rowoff_945, %coloff_1677 : i64
    %p_1682 = llvm.getelementptr %c_base_550[%v_1681] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1680, %p_1682 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk112
  ^sk112:
    %ok_1683 = llvm.and %rowok_944, %colok_1676 : i1
    llvm.cond_br %ok_1683, ^st113, ^sk113
  ^st113:
    %x_1684 = llvm.extractvalue %e_acc[114] : !acc
    %b_1685 = llvm.fptrunc %x_1684 : f32 to bf16
    %v_1686 = llvm.add %rowoff_946, %coloff_1677 : i64
    %p_1687 = llvm.getelementptr %c_base_550[%v_1686] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1685, %p_1687 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk113
  ^sk113:
    %col_1688 = llvm.add %col0_64_534, %c225_i64 : i64
    %colok_1689 = llvm.icmp "ult" %col_1688, %c_size1 : i64
    %coloff_1690 = llvm.mul %col_1688, %c_stride1 : i64
    %ok_1691 = llvm.and %rowok_943, %colok_1689 : i1
    llvm.cond_br %ok_1691, ^st114, ^sk114
  ^st114:
    %x_1692 = llvm.extractvalue %e_acc[113] : !acc
    %b_1693 = llvm.fptrunc %x_1692 : f32 to bf16
    %v_1694 = llvm.add %rowoff_945, %coloff_1690 : i64
    %p_1695 = llvm.getelementptr %c_base_550[%v_1694] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1693, %p_1695 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk114
  ^sk114:
    %ok_1696 = llvm.and %rowok_944, %colok_1689 : i1
    llvm.cond_br %ok_1696, ^st115, ^sk115
  ^st115:
    %x_1697 = llvm.extractvalue %e_acc[115] : !acc
    %b_1698 = llvm.fptrunc %x_1697 : f32 to bf16
    %v_1699 = llvm.add %rowoff_946, %coloff_1690 : i64
    %p_1700 = llvm.getelementptr %c_base_550[%v_1699] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1698, %p_1700 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk115
  ^sk115:
    %col_1701 = llvm.add %col0_64_534, %c232_i64 : i64
    %colok_1702 = llvm.icmp "ult" %col_1701, %c_size1 : i64
    %coloff_1703 = llvm.mul %col_1701, %c_stride1 : i64
    %ok_1704 = llvm.and %rowok_943, %colok_1702 : i1
    llvm.cond_br %ok_1704, ^st116, ^sk116
  ^st116:
    %x_1705 = llvm.extractvalue %e_acc[116] : !acc
    %b_1706 = llvm.fptrunc %x_1705 : f32 to bf16
    %v_1707 = llvm.add %rowoff_945, %coloff_1703 : i64
    %p_1708 = llvm.getelementptr %c_base_550[%v_1707] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1706, %p_1708 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk116
  ^sk116:
    %ok_1709 = llvm.and %rowok_944, %colok_1702 : i1
    llvm.cond_br %ok_1709, ^st117, ^sk117
  ^st117:
    %x_1710 = llvm.extractvalue %e_acc[118] : !acc
    %b_1711 = llvm.fptrunc %x_1710 : f32 to bf16
    %v_1712 = llvm.add %rowoff_946, %coloff_1703 : i64
    %p_1713 = llvm.getelementptr %c_base_550[%v_1712] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1711, %p_1713 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk117
  ^sk117:
    %col_1714 = llvm.add %col0_64_534, %c233_i64 : i64
    %colok_1715 = llvm.icmp "ult" %col_1714, %c_size1 : i64
    %coloff_1716 = llvm.mul %col_1714, %c_stride1 : i64
    %ok_1717 = llvm.and %rowok_943, %colok_1715 : i1
    llvm.cond_br %ok_1717, ^st118, ^sk118
  ^st118:
    %x_1718 = llvm.extractvalue %e_acc[117] : !acc
    %b_1719 = llvm.fptrunc %x_1718 : f32 to bf16
    %v_1720 = llvm.add %rowoff_945, %coloff_1716 : i64
    %p_1721 = llvm.getelementptr %c_base_550[%v_1720] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1719, %p_1721 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk118
  ^sk118:
    %ok_1722 = llvm.and %rowok_944, %colok_1715 : i1
    llvm.cond_br %ok_1722, ^st119, ^sk119
  ^st119:
    %x_1723 = llvm.extractvalue %e_acc[119] : !acc
    %b_1724 = llvm.fptrunc %x_1723 : f32 to bf16
    %v_1725 = llvm.add %rowoff_946, %coloff_1716 : i64
    %p_1726 = llvm.getelementptr %c_base_550[%v_1725] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1724, %p_1726 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk119
  ^sk119:
    %col_1727 = llvm.add %col0_64_534, %c240_i64 : i64
    %colok_1728 = llvm.icmp "ult" %col_1727, %c_size1 : i64
    %coloff_1729 = llvm.mul %col_1727, %c_stride1 : i64
    %ok_1730 = llvm.and %rowok_943, %colok_1728 : i1
    llvm.cond_br %ok_1730, ^st120, ^sk120
  ^st120:
    %x_1731 = llvm.extractvalue %e_acc[120] : !acc
    %b_1732 = llvm.fptrunc %x_1731 : f32 to bf16
    %v_1733 = llvm.add %rowoff_945, %coloff_1729 : i64
    %p_1734 = llvm.getelementptr %c_base_550[%v_1733] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1732, %p_1734 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk120
  ^sk120:
    %ok_1735 = llvm.and %rowok_944, %colok_1728 : i1
    llvm.cond_br %ok_1735, ^st121, ^sk121
  ^st121:
    %x_1736 = llvm.extractvalue %e_acc[122] : !acc
    %b_1737 = llvm.fptrunc %x_1736 : f32 to bf16
    %v_1738 = llvm.add %rowoff_946, %coloff_1729 : i64
    %p_1739 = llvm.getelementptr %c_base_550[%v_1738] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1737, %p_1739 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk121
  ^sk121:
    %col_1740 = llvm.add %col0_64_534, %c241_i64 : i64
    %colok_1741 = llvm.icmp "ult" %col_1740, %c_size1 : i64
    %coloff_1742 = llvm.mul %col_1740, %c_stride1 : i64
    %ok_1743 = llvm.and %rowok_943, %colok_1741 : i1
    llvm.cond_br %ok_1743, ^st122, ^sk122
  ^st122:
    %x_1744 = llvm.extractvalue %e_acc[121] : !acc
    %b_1745 = llvm.fptrunc %x_1744 : f32 to bf16
    %v_1746 = llvm.add %rowoff_945, %coloff_1742 : i64
    %p_1747 = llvm.getelementptr %c_base_550[%v_1746] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1745, %p_1747 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk122
  ^sk122:
    %ok_1748 = llvm.and %rowok_944, %colok_1741 : i1
    llvm.cond_br %ok_1748, ^st123, ^sk123
  ^st123:
    %x_1749 = llvm.extractvalue %e_acc[123] : !acc
    %b_1750 = llvm.fptrunc %x_1749 : f32 to bf16
    %v_1751 = llvm.add %rowoff_946, %coloff_1742 : i64
    %p_1752 = llvm.getelementptr %c_base_550[%v_1751] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1750, %p_1752 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk123
  ^sk123:
    %col_1753 = llvm.add %col0_64_534, %c248_i64 : i64
    %colok_1754 = llvm.icmp "ult" %col_1753, %c_size1 : i64
    %coloff_1755 = llvm.mul %col_1753, %c_stride1 : i64
    %ok_1756 = llvm.and %rowok_943, %colok_1754 : i1
    llvm.cond_br %ok_1756, ^st124, ^sk124
  ^st124:
    %x_1757 = llvm.extractvalue %e_acc[124] : !acc
    %b_1758 = llvm.fptrunc %x_1757 : f32 to bf16
    %v_1759 = llvm.add %rowoff_945, %coloff_1755 : i64
    %p_1760 = llvm.getelementptr %c_base_550[%v_1759] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1758, %p_1760 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk124
  ^sk124:
    %ok_1761 = llvm.and %rowok_944, %colok_1754 : i1
    llvm.cond_br %ok_1761, ^st125, ^sk125
  ^st125:
    %x_1762 = llvm.extractvalue %e_acc[126] : !acc
    %b_1763 = llvm.fptrunc %x_1762 : f32 to bf16
    %v_1764 = llvm.add %rowoff_946, %coloff_1755 : i64
    %p_1765 = llvm.getelementptr %c_base_550[%v_1764] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1763, %p_1765 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk125
  ^sk125:
    %col_1766 = llvm.add %col0_64_534, %c249_i64 : i64
    %colok_1767 = llvm.icmp "ult" %col_1766, %c_size1 : i64
    %coloff_1768 = llvm.mul %col_1766, %c_stride1 : i64
    %ok_1769 = llvm.and %rowok_943, %colok_1767 : i1
    llvm.cond_br %ok_1769, ^st126, ^sk126
  ^st126:
    %x_1770 = llvm.extractvalue %e_acc[125] : !acc
    %b_1771 = llvm.fptrunc %x_1770 : f32 to bf16
    %v_1772 = llvm.add %rowoff_945, %coloff_1768 : i64
    %p_1773 = llvm.getelementptr %c_base_550[%v_1772] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1771, %p_1773 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk126
  ^sk126:
    %ok_1774 = llvm.and %rowok_944, %colok_1767 : i1
    llvm.cond_br %ok_1774, ^st127, ^sk127
  ^st127:
    %x_1775 = llvm.extractvalue %e_acc[127] : !acc
    %b_1776 = llvm.fptrunc %x_1775 : f32 to bf16
    %v_1777 = llvm.add %rowoff_946, %coloff_1768 : i64
    %p_1778 = llvm.getelementptr %c_base_550[%v_1777] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
    llvm.store %b_1776, %p_1778 {alignment = 2 : i64} : bf16, !llvm.ptr<1>
    llvm.br ^sk127
  ^sk127:
    llvm.br ^exit

  ^exit:
    llvm.return
  }
}
}
