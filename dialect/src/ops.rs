//! The op table: the one list of every op of the tile dialect, with its spelling, its
//! class, a one-line summary and the detail. Everything else (parser, printer, verifier,
//! `tile-opt --list-ops`, the docs) reads this table; nothing lists the ops twice.

/// The class of an op, which decides its generic verification rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// A region-holding structural op (kernel, loop, branch).
    Structure,
    /// A block terminator.
    Terminator,
    /// Scalar `index`/integer arithmetic: two operands, one result, all of one integer type.
    IntBinary,
    /// Elementwise float binary op on tiles or float scalars of one type.
    FloatBinary,
    /// Elementwise float unary op on tiles or float scalars.
    FloatUnary,
    /// Any other op, verified by its own rule.
    Other,
    /// A GPU-level op produced by `tile-to-gpu` (shared memory, TMA, MMA, async groups).
    Gpu,
}

macro_rules! define_ops {
    ($( $variant:ident = $name:literal, $class:ident, $summary:literal, $detail:literal; )*) => {
        /// Every op of the dialect. `OpKind::name` gives its spelling.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum OpKind {
            $( #[doc = $summary] #[doc = ""] #[doc = $detail] $variant, )*
        }

        impl OpKind {
            /// All ops, in table order.
            pub const ALL: &'static [OpKind] = &[$(OpKind::$variant),*];

            /// The spelling (`"tile.dot"`).
            pub fn name(self) -> &'static str {
                match self { $(OpKind::$variant => $name,)* }
            }

            /// The class (see [`OpClass`]).
            pub fn class(self) -> OpClass {
                match self { $(OpKind::$variant => OpClass::$class,)* }
            }

            /// One-line summary, for `--help` and docs.
            pub fn summary(self) -> &'static str {
                match self { $(OpKind::$variant => $summary,)* }
            }

            /// The detail after the summary: operands, attributes, results, the PTX it
            /// becomes (empty when the summary says it all).
            pub fn detail(self) -> &'static str {
                match self { $(OpKind::$variant => $detail,)* }
            }

            /// Look an op up by spelling.
            pub fn from_name(s: &str) -> Option<OpKind> {
                match s { $($name => Some(OpKind::$variant),)* _ => None }
            }
        }
    };
}

define_ops! {
    // ---- structure -------------------------------------------------------------------
    Kernel = "tile.kernel", Structure,
        "A GPU kernel: named arguments, a launch grid expression, one body region ending in \
            `tile.return`.",
        "A GPU kernel: named arguments, a launch grid expression (`grid`), one body region \
            ending in `tile.return`. With `ftz = true`, f32 arithmetic on the GPU may flush \
            subnormal inputs and results to a zero of the same sign (PTX's `.ftz`, nvcc's \
            `-ftz=true`): `ex2.approx.ftz.f32` then needs no subnormal fix-up. The interpreter \
            computes without flushing. With `fp_fusion = true`, an f32 multiply whose result \
            an add or subtract takes may be computed with it as one fused multiply-add, \
            rounded once (PTX's `fma.rn.f32`; nvcc's `-fmad=true`, Triton's \
            `enable_fp_fusion`); the interpreter rounds each op.";
    Return = "tile.return", Terminator, "Ends a kernel body.", "";
    For = "tile.for", Structure,
        "Counted loop `for %i = lb to ub step s` with loop-carried values (operands lb, ub, step, \
            inits...).",
        "Counted loop (MLIR `scf.for`): operands lb, ub, step (all `index`), then the initial \
            carried values; the body's block arguments are the induction variable and the \
            carried values, and it ends with `tile.yield` of the next ones. The body runs for \
            iv = lb, lb + step, ... while iv < ub (signed), and the loop ends where iv + step \
            would overflow. The step must be positive: a constant step <= 0 is a verifier \
            error; at run time the interpreter reports one and the GPU kernel traps (PTX \
            `trap`, the launch fails).";
    If = "tile.if", Structure, "Two-way branch on an `i1`; both regions yield the results.", "";
    While = "tile.while", Structure,
        "Do-while loop with loop-carried values (MLIR `scf.while`, empty before-region).",
        "Do-while loop (MLIR `scf.while` with an empty before-region): operands are the initial \
            carried values, the body's block arguments the carried values; the body runs at least \
            once and ends with `tile.yield %continue: i1, %next...`; the results are the \
            carried values yielded by the last iteration.";
    Yield = "tile.yield", Terminator,
        "Terminates a `tile.for`, `tile.while` or `tile.if` region with its values.",
        "Ends a `tile.for`, `tile.while` or `tile.if` region, passing its values on (in \
            `tile.while`, an `i1` 'continue' first).";
    // ---- scalars ---------------------------------------------------------------------
    ProgramId = "tile.program_id", Other,
        "The index of this program (CTA tile) along grid dimension `dim` (0, 1 or 2): PTX \
            `%ctaid`.", "";
    NumPrograms = "tile.num_programs", Other,
        "The number of programs along grid dimension `dim`: PTX `%nctaid`.", "";
    Constant = "tile.constant", Other, "A scalar constant `{value = ...}` of the result type.", "";
    Dim = "tile.dim", Other,
        "The runtime size (elements) of dimension `dim` of a global tensor.", "";
    AddI = "tile.addi", IntBinary, "Integer addition (wrapping).", "";
    SubI = "tile.subi", IntBinary, "Integer subtraction (wrapping).", "";
    MulI = "tile.muli", IntBinary, "Integer multiplication (wrapping).", "";
    DivI = "tile.divi", IntBinary, "Signed integer division rounding toward zero.", "";
    RemI = "tile.remi", IntBinary, "Signed integer remainder.", "";
    CeilDiv = "tile.ceildiv", IntBinary,
        "Integer division rounding up (for non-negative operands).", "";
    MinI = "tile.mini", IntBinary, "Signed integer minimum.", "";
    MaxI = "tile.maxi", IntBinary, "Signed integer maximum.", "";
    CmpI = "tile.cmpi", Other,
        "Integer comparison `{predicate = \"eq\"|\"ne\"|\"slt\"|\"sle\"|\"sgt\"|\"sge\"}` giving \
            `i1`.", "";
    Select = "tile.select", Other,
        "`select %cond, %a, %b`: %a where %cond is true, else %b (scalars or tiles).", "";
    // ---- tiles -----------------------------------------------------------------------
    Load = "tile.load", Other,
        "Loads a tile from a global tensor at element offsets; out of bounds reads zero.",
        "Load a tile from a global tensor at element offsets (one per dimension); out-of-bounds \
            elements read as zero, or as `{padding = x}` (a number, \"inf\", \"-inf\" or \"nan\"; \
            float tiles) — e.g. \"-inf\" before a max reduction.";
    Gather = "tile.gather", Other,
        "Loads rows of a 2-D tensor picked by a tile of row indices (embedding lookups).",
        "`%t = tile.gather %T, %rows, %col : tile<R x C x T>`: row i of the result is row \
            `%rows[i]` of `%T` from column `%col` on (`%rows` a 1-D integer tile of R \
            elements); rows or columns outside the tensor read as zero, or as `{padding}`.";
    Extract = "tile.extract", Other,
        "Reads one element of a global tensor as a scalar (MLIR `tensor.extract`).",
        "`%v = tile.extract %T, %i0, ... : T` (one `index` per dimension of `%T`; the result \
            the tensor's element type): the element at (i0, ...), or zero outside the tensor. \
            One predicated `ld.global` per thread that runs it. For values the launch passes \
            through memory, known only at run time: a grouped GEMM's group offsets or a row's \
            group id. Passes keep it in order with stores and flag ops, as `tile.load`. In a \
            plain launch a read of a tensor the program stored to since its last barrier \
            (`tile.load`, `tile.gather`, `tile.extract`) comes after a CTA barrier, since \
            another thread may hold the element; a GEMM pipeline's epilogue orders such a \
            read only through a flag op's barrier.";
    Store = "tile.store", Other,
        "Store a tile into a global tensor at element offsets; out-of-bounds elements are \
            dropped.",
        "`tile.store %T, %o0, ..., %value` (one `index` offset per dimension of `%T`), or \
            `tile.store %T, %o0, ..., %mask, %value` with an `i1` tile of the value's shape \
            before the value (MLIR's `vector.maskedstore` order): only the elements where the \
            mask is true are written (Triton's `tl.store(..., mask=)`), so programs whose tiles \
            overlap rows of one tensor (a grouped GEMM's groups) each write their own rows. \
            Elements outside the tensor are dropped either way.";
    AtomicAdd = "tile.atomic_add", Other,
        "Atomically adds a tile into a global f32 tensor (`red.global.add.f32`).",
        "Atomically add a tile into a global f32 tensor at element offsets (one per dimension): \
            `atomic_add %T, %row, %col, %tile`; each element is one relaxed `red.global.add` (GPU \
            scope), so programs may add into the same elements in any order (split-K); \
            out-of-bounds elements are dropped. An `i1` mask tile before the value adds only \
            where it is true, as for `tile.store`. Each element is added once, even where the \
            tile's layout gives several threads copies of it (a reduction's result): by its \
            one owner (`LinearLayout::owner_masks`).";
    WaitFlag = "tile.wait_flag", Other,
        "Waits until element `%i` of a global i32 flag tensor equals `%v` (acquire, GPU scope).",
        "`tile.wait_flag %F, %i, %v` (`%F` a 1-D `tensor<?xi32>`, `%i` and `%v` index; the flag \
            compared with `%v`'s low 32 bits, for equality): one thread of the program spins \
            on `ld.acquire.gpu.global.b32` until `F[i] == v`, then every thread that runs the \
            op (the CTA; in a GEMM kernel, where the op stands in the epilogue after the K \
            loop, the consumer warpgroups) passes a barrier, so the program's later reads see \
            what the program that set the flag wrote before it. A program may wait only for \
            one that is resident at the same time, or that comes earlier in a static \
            persistent CTA's tile order: CUDA does not dispatch CTAs in a guaranteed order, \
            and a wait for a program that cannot run lasts forever. The reference interpreter \
            runs programs in launch order and reports a wait that no earlier program \
            satisfied as an error. Loads are not moved across it.";
    ReleaseFlag = "tile.release_flag", Other,
        "Sets element `%i` of a global i32 flag tensor to `%v` after the program's writes \
            (release, GPU scope).",
        "`tile.release_flag %F, %i, %v` (operands as `tile.wait_flag`): every thread that \
            runs the op passes a barrier, then one thread stores `v` to `F[i]` with \
            `st.release.gpu.global.b32`, so that a program that then sees the value with \
            `tile.wait_flag` sees the program's earlier global writes. An index outside `F` \
            is undefined behaviour on the GPU and an error in the interpreter.";
    ArriveFlag = "tile.arrive_flag", Other,
        "Adds 1 to element `%i` of a global i32 flag tensor after the program's writes and \
            gives the value before (acquire-release, GPU scope).",
        "`%old = tile.arrive_flag %F, %i : index` (`%F` a 1-D `tensor<?xi32>`, `%i` index): \
            every thread that runs the op passes a barrier, one thread runs \
            `fence.acq_rel.gpu; atom.global.add.u32; fence.acq_rel.gpu`, and the value `F[i]` \
            had before the add reaches every such thread (through shared memory and a second \
            barrier). \
            The program that sees n − 1 after n programs arrived is the last: it sees what the \
            others wrote before they arrived. No program waits, so any grid is safe.";
    Dot = "tile.dot", Other,
        "Matrix product with accumulate: `dot %a, %b, %acc` = a(M×K) · b(K×N) + acc(M×N).", "";
    Add = "tile.add", FloatBinary, "Elementwise addition.", "";
    Sub = "tile.sub", FloatBinary, "Elementwise subtraction.", "";
    Mul = "tile.mul", FloatBinary, "Elementwise multiplication.", "";
    Div = "tile.div", FloatBinary, "Elementwise division.", "";
    Max = "tile.max", FloatBinary, "Elementwise maximum (IEEE maxNum).", "";
    Min = "tile.min", FloatBinary, "Elementwise minimum (IEEE minNum).", "";
    Neg = "tile.neg", FloatUnary, "Elementwise negation.", "";
    Abs = "tile.abs", FloatUnary, "Elementwise absolute value.", "";
    Exp = "tile.exp", FloatUnary, "Elementwise e^x.", "";
    Exp2 = "tile.exp2", FloatUnary, "Elementwise 2^x.", "";
    Log = "tile.log", FloatUnary, "Elementwise natural logarithm.", "";
    Sqrt = "tile.sqrt", FloatUnary, "Elementwise square root.", "";
    Rsqrt = "tile.rsqrt", FloatUnary, "Elementwise 1/sqrt(x).", "";
    Tanh = "tile.tanh", FloatUnary, "Elementwise hyperbolic tangent.", "";
    Relu = "tile.relu", FloatUnary, "Elementwise max(x, 0).", "";
    Convert = "tile.convert", Other,
        "Element type conversion of a tile or scalar (round to nearest even on narrowing).", "";
    Transpose = "tile.transpose", Other, "Swap the two dimensions of a 2-D tile.", "";
    Reshape = "tile.reshape", Other,
        "Reshapes a tile to a shape with the same number of elements (row-major).",
        "Reshape a tile to another shape with the same number of elements (row-major order), e.g. \
            drop a size-1 batch dimension.";
    Broadcast = "tile.broadcast", Other,
        "Broadcast a tile with size-1 dimensions (or a scalar) to the result shape.", "";
    Reduce = "tile.reduce", Other,
        "Reduces dimension `dim` with `kind` (`add`, `max`, `min`), keeping it as size 1.",
        "Reduce dimension `dim` with `kind` (\"add\"|\"max\"|\"min\"); the result keeps that \
            dimension with size 1.";
    Iota = "tile.iota", Other,
        "A tile of i32/i64/index whose elements are their coordinate along `dim`.",
        "`%i = tile.iota {dim = d} : tile<S x i32>`: element c holds `c[d]` (Triton's `arange`, \
            MLIR's `stablehlo.iota`); with `tile.cmpi` and `tile.select` it masks the ragged \
            end of a tile.";
    ExtractSlice = "tile.extract_slice", Other,
        "A static slice of a tile (MLIR's `tensor.extract_slice`, unit strides).",
        "`%y = tile.extract_slice %x {offsets = [o0, o1, ...]} : tile<S x T>`: element c \
            of the result is element o + c of `%x` (the result's shape gives the sizes; \
            o + S must fit in `%x`'s shape). In registers where the slice is whole register \
            bits of `%x`'s layout, else through shared memory.";
    Splat = "tile.splat", Other, "A tile with every element equal to a scalar operand.", "";
    Zeros = "tile.zeros", Other, "A tile of zeros.", "";
    // ---- GPU level (produced by tile-to-gpu) -------------------------------------------
    SmemAlloc = "tile.smem_alloc", Gpu,
        "Allocates a shared-memory ring `smem<stages x shape x elem>`.",
        "Allocate a shared-memory ring `smem<stages x shape x elem>` with `{swizzle = \
            0|32|64|128}` (bytes); stages are 1024-byte aligned.";
    MbarrierAlloc = "tile.mbarrier_alloc", Gpu,
        "Allocates and initialises an array of mbarriers (`mbarrier.init.shared.b64`).",
        "Allocate `mbarrier<count>` in shared memory and initialise each with `{arrive_count = n}` \
            (PTX `mbarrier.init.shared.b64`).";
    WarpSpecialize = "tile.warp_specialize", Structure,
        "Splits the CTA into a producer region and a consumer region.",
        "Split the CTA: region 0 runs on the producer (the first warpgroup with wgmma, the first \
            warp otherwise; one elected thread issues copies), region 1 on `consumers` warpgroups \
            (the epilogue included); results, if any, are what region 1 yields.";
    MbarrierExpectTx = "tile.mbarrier_expect_tx", Gpu,
        "Arrives on a barrier expecting `bytes` transaction bytes (`expect_tx`).",
        "`mbarrier.arrive.expect_tx` on barrier `index` of an array for `bytes` transaction bytes \
            (one elected producer thread).";
    TmaLoad = "tile.tma_load", Gpu,
        "Copies one ring stage global→shared with `cp.async.bulk.tensor` (TMA).",
        "`cp.async.bulk.tensor` global→shared of one ring stage: operands (tensor, ring, \
            mbarriers, stage, coords...); completes on barrier `stage` of the mbarriers. \
            `multicast = d` (a kernel with a `cluster` of more than one CTA along `d`): the \
            CTAs of the cluster that differ from this one only along `d` load the same box; \
            CTA i of them (its `tile.cluster_ctaid` along `d`) copies rows i·R/n to (i+1)·R/n - 1 \
            of the stage's R rows (n: the cluster's size along `d`) into every one of them \
            (`.multicast::cluster`), completing its bytes on the same barrier of each: every \
            CTA's stage fills, and its barrier counts the whole stage's bytes.";
    MbarrierWait = "tile.mbarrier_wait", Gpu,
        "Waits for a barrier phase of parity `phase` (`mbarrier.try_wait.parity`).",
        "Wait until barrier `index` completes the phase of parity `phase` \
            (`mbarrier.try_wait.parity` in a loop): operands (mbarriers, index, phase).";
    MbarrierArrive = "tile.mbarrier_arrive", Gpu,
        "Arrives on a barrier (`mbarrier.arrive`), releasing a stage to its producer.",
        "Arrive on barrier `index` (`mbarrier.arrive`, one elected thread per consumer warpgroup): \
            releases a stage to its producer. `cta = r`: on CTA r's barrier of the cluster \
            instead (`mapa`, release at cluster scope). `peer_dims` (a list of dimensions): \
            on this CTA's \
            barrier and on that of every CTA of the cluster that differs from this one only \
            along one of the dimensions `d` (the CTAs whose multicast copies fill this CTA's \
            stage, and which this CTA's copies fill).";
    WgmmaFence = "tile.wgmma_fence", Gpu,
        "`wgmma.fence.sync.aligned`: orders register accesses before the next wgmma.", "";
    Mma = "tile.mma", Gpu,
        "Asynchronous MMA over one ring stage (`wgmma.mma_async`, or `mma.sync`).",
        "Asynchronous MMA over one ring stage: `mma %a_ring, %b_ring, %stage, %acc` \
            (`wgmma.mma_async` chain on sm_90a; `ldmatrix` + `mma.sync` elsewhere); `%a` may be a \
            tile in registers (wgmma's A-from-registers form). With a stage per ring, \
            `mma %a_ring, %b_ring, %stage_a, %stage_b, %acc` (a loop-invariant A beside a \
            pipelined B).";
    CommitGroup = "tile.commit_group", Gpu,
        "`wgmma.commit_group.sync.aligned`: closes the group of MMAs issued since the last \
            commit.", "";
    WaitGroup = "tile.wait_group", Gpu,
        "Waits until at most `pending` MMA groups are pending (`wgmma.wait_group`).",
        "`wgmma.wait_group.sync.aligned N` with N = `pending`: returns once at most N groups are \
            pending; takes and returns the accumulators it guards (tied).";
    Barrier = "tile.barrier", Gpu, "CTA-wide barrier (`bar.sync 0`).",
        "`bar.sync 0`. `placed = \"KIND\"` (`wgmma`, `cp_async`) marks one that \
            `async-wait-placement` placed (the pass deletes it when it \
            runs again).";
    ConvertLayout = "tile.convert_layout", Gpu,
        "Moves a tile to another layout (registers, shuffles or a shared-memory round trip).",
        "`%y = tile.convert_layout %x : tile<S x T, #linear<...>>`: the same elements in the \
            result's layout; the lowering keeps elements that stay in their thread in \
            registers and sends the others through shared memory.";
    CtaId = "tile.ctaid", Gpu,
        "The hardware CTA index along `dim` (PTX `%ctaid`).",
        "The hardware CTA index along `dim` (PTX `%ctaid`), as opposed to the logical \
            `tile.program_id` (used by persistent schedules).";
    NumCtas = "tile.nctaid", Gpu, "The number of launched CTAs along `dim` (PTX `%nctaid`).", "";
    ClusterCtaRank = "tile.cluster_ctarank", Gpu,
        "This CTA's rank in its cluster (PTX `%cluster_ctarank`, 0 to cluster size - 1).", "";
    ClusterId = "tile.clusterid", Gpu,
        "The cluster's index in the grid along `dim` (PTX `%clusterid`).",
        "The cluster's index in the grid along `dim` (PTX `%clusterid.x/y/z`): `%ctaid` \
            divided by the kernel's `cluster` size along `dim`; the same in every CTA of a \
            cluster.";
    NumClusters = "tile.nclusterid", Gpu,
        "The number of clusters in the grid along `dim` (PTX `%nclusterid`).", "";
    ClusterCtaId = "tile.cluster_ctaid", Gpu,
        "This CTA's index in its cluster along `dim` (PTX `%cluster_ctaid`).",
        "This CTA's index in its cluster along `dim` (PTX `%cluster_ctaid.x/y/z`, 0 to \
            the cluster's size along `dim`, less 1): `%ctaid` mod the kernel's `cluster` size \
            along `dim`. The rank \
            (`tile.cluster_ctarank`) is x + y·X + z·X·Y for a cluster of X × Y × Z.";
    FenceProxyAsync = "tile.fence_proxy_async", Gpu,
        "Orders generic-proxy before async-proxy shared accesses (`fence.proxy.async`).",
        "`fence.proxy.async.shared::cta`: orders this thread's generic-proxy shared-memory \
            accesses before later async-proxy ones (a response buffer read with `ld.shared` before \
            `try_cancel` rewrites it). `placed = \"cp_async\"` marks one that \
            `async-wait-placement` placed (the pass deletes it when it \
            runs again).";
    SmemStore = "tile.smem_store", Gpu,
        "Writes a tile's columns into a shared-memory slot (generic proxy).",
        "Write columns [`col_offset`, `col_offset` + W) of an R×N tile into slot `slot` of a \
            ring `smem<S x R x W x T>` (operands: tile, ring, slot); the tile's element type \
            is the ring's. In a GEMM epilogue the tile is an accumulator in the MMA fragment \
            layout and each consumer warpgroup writes its 64 rows (16-bit: \
            `stmatrix.sync.aligned.m8n8.x4`, 128-byte swizzle); in a laid-out kernel the tile \
            has any layout and fills the slot (W = N), 128-byte swizzled as wgmma's \
            descriptors read it. A generic-proxy write: a `tile.fence_proxy_async` and a \
            barrier must come before a `tile.tma_store` or a `tile.mma` reads the slot.";
    TmaStore = "tile.tma_store", Gpu,
        "Copies one staging slot shared→global with `cp.async.bulk.tensor` (TMA).",
        "`cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group` shared→global of one staging \
            slot: operands (tensor, ring, slot, coords...); the slot's rows are split among the \
            warpgroups that run it (consumer warpgroup w stores its R/consumers rows at row \
            coordinate + w·R/consumers), each issued by the warpgroup's elected thread \
            (its thread 0); out-of-bounds elements are clipped by TMA. Joins the \
            thread's open bulk async-group (closed by `tile.bulk_commit_group`).";
    BulkCommitGroup = "tile.bulk_commit_group", Gpu,
        "Closes the bulk async-group of the TMA stores issued since the last commit.",
        "`cp.async.bulk.commit_group` by the warpgroup's elected thread: closes the bulk \
            async-group of the `tile.tma_store`s issued since the last commit (bulk groups count \
            separately from wgmma groups).";
    BulkWaitGroup = "tile.bulk_wait_group", Gpu,
        "Waits until at most `pending` bulk groups are pending (`cp.async.bulk.wait_group`).",
        "`cp.async.bulk.wait_group[.read] N` with N = `pending` (0 to 7) by the warpgroup's \
            elected thread: returns once at most N bulk groups are pending; with `{read = true}` \
            only their reads of shared memory must be complete (the staging slot may be \
            rewritten, after a barrier), otherwise their writes too.";
    CpAsync = "tile.cp_async", Gpu,
        "Copies a box global→shared with per-thread `cp.async` (an async-group of its own).",
        "`cp.async.cg.shared.global` of one ring stage: operands (tensor, ring, stage, \
            coords...) as `tile.tma_load`'s without the barrier; the box (the stage's shape over \
            the tensor's last two dimensions) at `coords` is split into 16-byte chunks among \
            all threads of the CTA, each written where `tile.smem_store` puts it, elements \
            outside the tensor as zero. Each thread's chunks join its open cp.async group \
            (closed by `tile.cp_async_commit_group`); the copy is complete for the thread \
            after its `tile.cp_async_wait_group`, and for other threads after a `tile.barrier` \
            that follows their waits (with a `tile.fence_proxy_async` before that barrier \
            where wgmma or TMA reads or rewrites the stage). Not inside \
            `tile.warp_specialize`.";
    CpAsyncCommitGroup = "tile.cp_async_commit_group", Gpu,
        "`cp.async.commit_group`: closes the thread's cp.async group.", "";
    CpAsyncWaitGroup = "tile.cp_async_wait_group", Gpu,
        "Waits until at most `pending` cp.async groups are pending (`cp.async.wait_group`).",
        "`cp.async.wait_group N` with N = `pending` (0 to 7): returns once at most N of the \
            thread's cp.async groups are pending (cp.async groups count separately from wgmma \
            and bulk groups).";
    SmemLoad = "tile.smem_load", Gpu,
        "Reads a view of a shared-memory stage into registers (generic proxy).",
        "`%t = tile.smem_load %ring, %stage {offsets = [r, c], transpose = b} : tile<...>`: \
            the view of stage `stage` that starts at element (r, c) (default (0, 0)) and has \
            the result's shape, or, with `transpose = true`, its transpose (result element \
            (i, j) is stage element (r + j, c + i)); the stage is laid out as \
            `tile.smem_store` writes it. Every thread reads its registers of the result's \
            layout (`ld.shared`). `tile.smem_store` takes the same view attributes.";
    NamedBarrier = "tile.named_barrier", Gpu,
        "Named barrier over `threads` threads (`bar.sync id, threads`).",
        "`bar.sync id, threads` over `threads` threads (a multiple of 32); `id` 1 to 15 (0 is the \
            CTA barrier of `tile.barrier`). Inside the consumer region of `tile.warp_specialize` \
            with `threads = 128`, consumer warpgroup w uses barrier `id + w`, so each \
            warpgroup synchronises alone. `placed = \"bulk\"` as `placed` for `tile.barrier`. \
            In a plain launch of W warpgroups (PTX ISA, bar.sync / bar.arrive): `arrive = true` \
            is `bar.arrive` (arrives without waiting); `peer = P` (0 to 7) makes warpgroup w \
            use barrier `id + (w + P) mod W` (P = 0 its own, P = 1 the next one's: \
            warpgroups taking turns); `only_warpgroup = k` (0 to 7) runs it in warpgroup k \
            only. `verify-named-barriers` proves that such barriers pair up and never \
            deadlock.";
    ClcTryCancel = "tile.clc_try_cancel", Gpu,
        "Asks to cancel a not-yet-launched cluster (`clusterlaunchcontrol.try_cancel`).",
        "`clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::\
            bytes[.multicast::cluster::all].b128` (PTX ISA 8.6, sm_100; multicast sm_100a): \
            operands (response ring `smem<S x 4 x i32>`, mbarriers, slot); asks to cancel a \
            not-yet-launched cluster, writes the 16-byte response into slot `slot` and \
            completes 16 transaction bytes on barrier `slot` (of every CTA of the \
            cluster with `{multicast = true}`).";
    ClcQuery = "tile.clc_query", Gpu,
        "Reads and decodes a try_cancel response (`clusterlaunchcontrol.query_cancel`).",
        "Read slot `slot` of a try_cancel response ring with one `ld.shared.b128` (`load_bits`, \
            default 128) and decode it: results (`i1` is_canceled, index ctaid.x, ctaid.y, ctaid.z \
            of the canceled cluster's first CTA; the ids are 0 when not canceled) — \
            `clusterlaunchcontrol.query_cancel.is_canceled` and a predicated \
            `get_first_ctaid`.";
}

impl OpKind {
    /// Whether the op must end a block.
    pub fn is_terminator(self) -> bool {
        self.class() == OpClass::Terminator
    }
    /// Whether the op belongs to the GPU level, which `tile-to-gpu` writes (class
    /// [`OpClass::Gpu`], and `tile.warp_specialize`): a source kernel uses none of them.
    pub fn is_gpu_level(self) -> bool {
        self.class() == OpClass::Gpu || self == OpKind::WarpSpecialize
    }
    /// Whether the op is one of the flag ops (`tile.wait_flag`, `tile.release_flag`,
    /// `tile.arrive_flag`), which order memory between programs: loads do not move across
    /// them.
    pub fn is_flag(self) -> bool {
        matches!(
            self,
            OpKind::WaitFlag | OpKind::ReleaseFlag | OpKind::ArriveFlag
        )
    }
    /// Whether the op reads global memory through a tensor (`tile.load`, `tile.gather`,
    /// `tile.extract`): pure, but a store or a flag op between two such reads may change
    /// what the second one reads.
    pub fn reads_global(self) -> bool {
        matches!(self, OpKind::Load | OpKind::Gather | OpKind::Extract)
    }
    /// Whether the op has no side effects (may be removed when unused, and reordered): of
    /// the GPU level, only layout conversions and the reads of special registers.
    pub fn is_pure(self) -> bool {
        !matches!(
            self,
            OpKind::Kernel
                | OpKind::Return
                | OpKind::For
                | OpKind::If
                | OpKind::While
                | OpKind::Yield
                | OpKind::Store
                | OpKind::AtomicAdd
                | OpKind::WaitFlag
                | OpKind::ReleaseFlag
                | OpKind::ArriveFlag
                | OpKind::WarpSpecialize
        ) && (self.class() != OpClass::Gpu
            || matches!(
                self,
                OpKind::ConvertLayout
                    | OpKind::CtaId
                    | OpKind::NumCtas
                    | OpKind::ClusterCtaRank
                    | OpKind::ClusterCtaId
                    | OpKind::ClusterId
                    | OpKind::NumClusters
            ))
    }
}

/// Declares the enum of a string attribute's values: its spellings, `from_name`, `Display`
/// and the conversion into an [`crate::Attribute`].
macro_rules! attr_enum {
    ($(#[$m:meta])* $name:ident, $attr:literal,
     { $( $(#[$vm:meta])* $v:ident = $s:literal ),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $( $(#[$vm])* $v, )* }

        impl $name {
            /// Every value, in table order.
            pub const ALL: &'static [$name] = &[$($name::$v),*];
            /// Every spelling, in table order.
            pub const NAMES: &'static [&'static str] = &[$($s),*];
            /// The name of the attribute that holds it.
            pub const ATTR: &'static str = $attr;

            /// The spelling in the text form.
            pub fn name(self) -> &'static str {
                match self { $($name::$v => $s,)* }
            }

            /// The value spelled `s`.
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$v),)* _ => None }
            }

            /// The value of `op`'s attribute (`None` when it is absent or not a spelling).
            pub fn of(op: &crate::Operation) -> Option<Self> {
                op.str_attr($attr).and_then(Self::from_name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl From<$name> for crate::Attribute {
            fn from(v: $name) -> crate::Attribute {
                crate::Attribute::Str(v.name().to_string())
            }
        }
    };
}

attr_enum! {
    /// The combining function of a `tile.reduce` (its `kind` attribute).
    ReduceKind, "kind", {
        /// Sum (`add`; the identity is 0).
        Add = "add",
        /// Maximum (IEEE maxNum; the identity is -inf).
        Max = "max",
        /// Minimum (IEEE minNum; the identity is +inf).
        Min = "min",
    }
}

attr_enum! {
    /// The predicate of a `tile.cmpi` (its `predicate` attribute), MLIR `arith.cmpi`'s
    /// signed predicates.
    CmpPredicate, "predicate", {
        /// a == b.
        Eq = "eq",
        /// a != b.
        Ne = "ne",
        /// a < b, signed.
        Slt = "slt",
        /// a <= b, signed.
        Sle = "sle",
        /// a > b, signed.
        Sgt = "sgt",
        /// a >= b, signed.
        Sge = "sge",
    }
}

attr_enum! {
    /// How a `tile.dot` or `tile.mma` multiplies (its `precision` attribute).
    Precision, "precision", {
        /// IEEE products of the operand type (the default).
        Ieee = "ieee",
        /// f32 operands read as tf32 (10-bit mantissa), as `mma` with `.tf32` does.
        Tf32 = "tf32",
    }
}

/// The values that region `r` of `op` yields (its closing `tile.yield`'s operands); empty
/// where the region does not end in one.
pub fn region_yields(op: &crate::Operation, r: usize) -> &[crate::Value] {
    op.regions
        .get(r)
        .and_then(|b| b.ops.last())
        .filter(|y| y.kind == crate::OpKind::Yield)
        .map(|y| y.operands.as_slice())
        .unwrap_or_default()
}

/// One loop-carried value of a `tile.for` or `tile.while` ([`carried`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Carried {
    /// The operand that starts it.
    pub init: crate::Value,
    /// The body's block argument that holds it.
    pub arg: Option<crate::Value>,
    /// The loop's result.
    pub result: Option<crate::Value>,
    /// What the body yields for the next trip (and, after the last, the result).
    pub yielded: Option<crate::Value>,
}

/// The carried values of a `tile.for` (operands lb, ub, step, then the inits; block
/// arguments the induction variable, then the carried values; the body yields the carried
/// values) or a `tile.while` (operands the inits; block arguments the carried values; the
/// body yields the continue flag, then the carried values), in order; empty for other ops.
/// A missing argument, result or yield (IR the verifier rejects) is `None`.
pub fn carried(op: &crate::Operation) -> Vec<Carried> {
    let (oo, ao, yo) = match op.kind {
        crate::OpKind::For => (3, 1, 0),
        crate::OpKind::While => (0, 0, 1),
        _ => return vec![],
    };
    let args = op
        .regions
        .first()
        .map(|b| b.args.as_slice())
        .unwrap_or_default();
    let ys = region_yields(op, 0);
    op.operands
        .iter()
        .skip(oo)
        .enumerate()
        .map(|(j, &init)| Carried {
            init,
            arg: args.get(ao + j).copied(),
            result: op.results.get(j).copied(),
            yielded: ys.get(yo + j).copied(),
        })
        .collect()
}

/// The operands of a `tile.mma` (GPU level): `a` (a shared-memory ring, or for wgmma's
/// register-A form an A-fragment tile), `b` (a ring), the stage each ring is read at, and
/// the accumulator. Written `tile.mma %a, %b, %stage, %acc` (both rings at one stage) or
/// `tile.mma %a, %b, %stage_a, %stage_b, %acc` (a stage per operand: a loop-invariant A,
/// such as attention's Q, beside a pipelined B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaOperands {
    /// The A ring or A-fragment tile.
    pub a: crate::Value,
    /// The B ring.
    pub b: crate::Value,
    /// The stage of `a` read (unused for an A-fragment tile).
    pub stage_a: crate::Value,
    /// The stage of `b` read.
    pub stage_b: crate::Value,
    /// The accumulator (its registers are the result's).
    pub acc: crate::Value,
}

/// A `tile.dot`'s or `tile.mma`'s `precision`: `"ieee"` (the default) or `"tf32"` (f32 data
/// read as tf32); the verifier checks the value. Rewrites that are exact only in IEEE
/// arithmetic (constant folding, scaling moved across the product) must leave a tf32 dot
/// alone.
pub fn dot_precision(op: &crate::Operation) -> &str {
    op.str_attr("precision").unwrap_or("ieee")
}

/// Whether a `tile.mma`'s A ring is K-major (PTX ISA §9.7.15.5.1, wgmma's "K-major" and
/// "MN-major" shared-memory matrices): `a_major = "k"` (the default: the ring is M×K) or
/// `"m"` (K×M).
///
/// # Errors
/// Any other value, as the message the verifier reports.
pub fn mma_a_k_major(op: &crate::Operation) -> Result<bool, String> {
    major(op, "a_major", ("k", true), ("m", false))
}

/// Whether a `tile.mma`'s B ring is K-major: `b_major = "k"` (the ring is N×K, as
/// `nn.Linear` stores its weight) or `"n"` (the default: K×N).
///
/// # Errors
/// Any other value, as the message the verifier reports.
pub fn mma_b_k_major(op: &crate::Operation) -> Result<bool, String> {
    major(op, "b_major", ("n", false), ("k", true))
}

/// Attribute `name` of `op`, one of two strings (the first is the default).
fn major(
    op: &crate::Operation,
    name: &str,
    first: (&str, bool),
    second: (&str, bool),
) -> Result<bool, String> {
    match op.attr(name) {
        None => Ok(first.1),
        Some(crate::Attribute::Str(s)) if s == first.0 => Ok(first.1),
        Some(crate::Attribute::Str(s)) if s == second.0 => Ok(second.1),
        Some(a) => Err(format!(
            "'{}' {name} must be \"{}\" or \"{}\", found {a}",
            op.kind.name(),
            first.0,
            second.0
        )),
    }
}

/// The threads of a CTA of `kernel`: the product of its `block` attribute (x, y, z), as
/// `tile-assign-layouts` and `tile-to-gpu` set it; `None` for a kernel without one.
pub fn block_threads(kernel: &crate::Operation) -> Option<i64> {
    let dims = kernel.attr("block")?.as_array()?;
    Some(dims.iter().filter_map(|d| d.as_int()).product())
}

/// The operands of `op`, a `tile.mma` of 4 or 5 operands; `None` for another count.
pub fn mma_operands(op: &crate::Operation) -> Option<MmaOperands> {
    match *op.operands.as_slice() {
        [a, b, s, acc] => Some(MmaOperands {
            a,
            b,
            stage_a: s,
            stage_b: s,
            acc,
        }),
        [a, b, sa, sb, acc] => Some(MmaOperands {
            a,
            b,
            stage_a: sa,
            stage_b: sb,
            acc,
        }),
        _ => None,
    }
}

/// The `offsets` attribute of `op` (`tile.extract_slice`, stage views): its non-negative
/// integers in order, empty when absent (the verifier checks count and range).
pub fn offsets(op: &crate::Operation) -> Vec<u64> {
    op.attr("offsets")
        .and_then(crate::Attribute::as_array)
        .map(|xs| {
            xs.iter()
                .filter_map(crate::Attribute::as_int)
                .filter_map(|x| u64::try_from(x).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The value a `tile.load` reads for elements outside the tensor: its `padding` attribute
/// (a number, or `"inf"`, `"-inf"`, `"nan"`), 0 without one.
///
/// # Errors
/// A `padding` of another kind or spelling.
pub fn load_padding(padding: Option<&crate::Attribute>) -> Result<f64, String> {
    use crate::Attribute as A;
    match padding {
        None => Ok(0.0),
        Some(A::Float(x)) => Ok(*x),
        Some(A::Int(i)) => Ok(*i as f64),
        Some(A::Str(s)) => match s.as_str() {
            "inf" | "+inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            "nan" => Ok(f64::NAN),
            other => Err(format!(
                "'padding' is a number or one of \"inf\", \"-inf\", \"nan\"; found \"{other}\""
            )),
        },
        Some(a) => Err(format!("'padding' is a number or a string, found {a}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn names_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for &op in OpKind::ALL {
            assert!(seen.insert(op.name()), "duplicate {}", op.name());
            assert_eq!(OpKind::from_name(op.name()), Some(op));
            assert!(op.name().starts_with("tile."));
        }
        assert_eq!(OpKind::from_name("tile.nope"), None);
    }
}
