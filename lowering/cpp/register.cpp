// What tilec's MLIR driver registers: the dialects, external models and LLVM IR
// translations of its pipeline, and nothing else, so that the static link keeps only
// these. MLIR's C API offers this only as "register everything"
// (mlir-c/RegisterEverything.h), which links every dialect, pass and translation in.

#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "llvm/Support/CommandLine.h"

// The `llvm`, `nvvm` and `gpu` dialects; `#nvvm.target`'s serialization to PTX (what
// `gpu-module-to-binary` calls); the translations of builtin, llvm, nvvm and gpu ops to
// LLVM IR.
extern "C" void tilecRegisterDialects(MlirDialectRegistry raw) {
  mlir::DialectRegistry &registry = *unwrap(raw);
  registry.insert<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect, mlir::gpu::GPUDialect>();
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
}

// Sets one of LLVM's registered command-line options (`name` without the dash) to `value`,
// as `-name=value` would; false if no such option exists or the value does not parse.
// LLVM's options are process-wide: call it under the driver's lock.
extern "C" bool tilecSetLlvmOption(const char *name, const char *value) {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find(name);
  if (it == options.end())
    return false;
  return !it->second->addOccurrence(0, name, value);
}
