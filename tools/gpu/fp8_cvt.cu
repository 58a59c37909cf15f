// Checks the interpreter's rounding to e4m3 and e5m2 (dialect/src/interp.rs, round_to)
// against PTX's cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 on the GPU (sm_89 or later).
//
//   TILEC_FP8_TABLE=gpu-out/fp8/table.bin \
//       cargo test --release -p tilec-dialect --lib fp8_table_for_the_gpu_check
//   nvcc -arch=sm_90a -o fp8_cvt tools/gpu/fp8_cvt.cu && ./fp8_cvt gpu-out/fp8/table.bin
//
// The table holds (x, e4m3(x), e5m2(x)) as little-endian f32 triples. Each x is converted on
// the GPU, the byte decoded back with cvt.rn.f16x2.{e4m3x2,e5m2x2} (exact), and compared bit
// for bit with the interpreter (any NaN equals any NaN). Prints the count and the first
// mismatches; exit status 1 if any.
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
#include <cuda_fp16.h>

__device__ float decode(uint16_t packed, bool e4m3) {
    uint32_t h2;
    if (e4m3) {
        asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(packed));
    } else {
        asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(packed));
    }
    __half lo;
    uint16_t bits = (uint16_t)(h2 & 0xffff);
    memcpy(&lo, &bits, 2);
    return __half2float(lo);
}

__global__ void convert(const float* x, float* a, float* b, uint8_t* codes, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint16_t pa, pb;
    // d = {hi: first source, lo: second source}.
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pa) : "f"(0.0f), "f"(x[i]));
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pb) : "f"(0.0f), "f"(x[i]));
    a[i] = decode(pa, true);
    b[i] = decode(pb, false);
    codes[2 * i] = (uint8_t)(pa & 0xff);
    codes[2 * i + 1] = (uint8_t)(pb & 0xff);
}

static bool same(float p, float q) {
    if (p != p && q != q) return true;
    uint32_t u, v;
    memcpy(&u, &p, 4);
    memcpy(&v, &q, 4);
    return u == v;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s TABLE\n", argv[0]);
        return 2;
    }
    FILE* f = fopen(argv[1], "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", argv[1]);
        return 2;
    }
    std::vector<float> t;
    float buf[3];
    while (fread(buf, sizeof(float), 3, f) == 3) t.insert(t.end(), buf, buf + 3);
    fclose(f);
    int n = (int)(t.size() / 3);
    std::vector<float> x(n), ra(n), rb(n), ga(n), gb(n);
    std::vector<uint8_t> codes(2 * n);
    for (int i = 0; i < n; i++) {
        x[i] = t[3 * i];
        ra[i] = t[3 * i + 1];
        rb[i] = t[3 * i + 2];
    }
    float *dx, *da, *db;
    uint8_t* dc;
    cudaMalloc(&dx, n * 4);
    cudaMalloc(&da, n * 4);
    cudaMalloc(&db, n * 4);
    cudaMalloc(&dc, 2 * n);
    cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice);
    convert<<<(n + 255) / 256, 256>>>(dx, da, db, dc, n);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e));
        return 2;
    }
    cudaMemcpy(ga.data(), da, n * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(gb.data(), db, n * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(codes.data(), dc, 2 * n, cudaMemcpyDeviceToHost);
    int bad = 0, saturated = 0, nan = 0;
    for (int i = 0; i < n; i++) {
        saturated += (ga[i] == 448.0f || ga[i] == -448.0f) + (gb[i] == 57344.0f || gb[i] == -57344.0f);
        nan += (ga[i] != ga[i]) + (gb[i] != gb[i]);
        for (int k = 0; k < 2; k++) {
            float g = k ? gb[i] : ga[i], r = k ? rb[i] : ra[i];
            if (!same(g, r)) {
                if (bad < 20)
                    printf("mismatch %s x=%.9g (0x%08x): gpu %.9g (code 0x%02x), interpreter %.9g\n",
                           k ? "e5m2" : "e4m3", x[i], *(uint32_t*)&x[i], g, codes[2 * i + k], r);
                bad++;
            }
        }
    }
    printf("fp8 cvt.rn.satfinite: %d inputs x 2 formats, %d mismatches (%d saturated, %d NaN "
           "results)\n", n, bad, saturated, nan);
    return bad ? 1 : 0;
}
