// A module for tile_compile_errors.tile: llvm.add uses its own result.
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k() {
      %0 = llvm.add %0, %0 : i32
      llvm.return
    }
  }
}
