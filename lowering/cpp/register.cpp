// What tilec's MLIR driver registers: the dialects, external models and LLVM IR
// translations of its pipeline, and nothing else, so that the static link keeps only
// these. MLIR's C API offers this only as "register everything"
// (mlir-c/RegisterEverything.h), which links every dialect, pass and translation in.

#include "mlir-c/ExecutionEngine.h"
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
#include "mlir/Target/LLVM/NVVM/Utils.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <numeric>

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

namespace {
// `tilec-split-aggregates`: keeps every field of a multi-result inline-asm statement (an
// MMA's accumulator registers, as a struct) in one value of its own across blocks.
// - An `extractvalue` of an instruction's struct result moves to right after that
//   instruction (InstCombine sinks them into the block of their use).
// - A struct `phi` whose every use is an `extractvalue` becomes one phi per extracted
//   field, each fed by an `extractvalue` in the incoming block (InstCombine folds a phi of
//   extractvalues into an extractvalue of a struct phi).
// A struct used in another block lives in one virtual register per field, and instruction
// selection copies all of them for every `extractvalue` there
// (`SelectionDAGBuilder::getCopyFromRegs`): quadratic in the fields, 128 for an m64n256
// wgmma accumulator.
struct SplitAggregates : llvm::PassInfoMixin<SplitAggregates> {
  llvm::PreservedAnalyses run(llvm::Function &f, llvm::FunctionAnalysisManager &) {
    bool changed = false;
    // Struct phis used only by single-index extractvalues, split until none is left.
    for (bool again = true; again;) {
      again = false;
      for (llvm::BasicBlock &bb : f) {
        for (llvm::PHINode &phi : llvm::make_early_inc_range(bb.phis())) {
          if (!phi.getType()->isStructTy() || phi.use_empty())
            continue;
          bool all = llvm::all_of(phi.users(), [&](llvm::User *u) {
            auto *ev = llvm::dyn_cast<llvm::ExtractValueInst>(u);
            return ev && ev->getNumIndices() == 1;
          });
          if (!all)
            continue;
          llvm::DenseMap<unsigned, llvm::PHINode *> fields;
          for (llvm::User *u : llvm::make_early_inc_range(phi.users())) {
            auto *ev = llvm::cast<llvm::ExtractValueInst>(u);
            unsigned i = ev->getIndices()[0];
            llvm::PHINode *&field = fields[i];
            if (!field) {
              field = llvm::PHINode::Create(ev->getType(), phi.getNumIncomingValues(),
                                            phi.getName() + ".f" + llvm::Twine(i));
              field->insertBefore(phi.getIterator());
              // One extractvalue per predecessor: a phi lists a block once per edge.
              llvm::DenseMap<llvm::BasicBlock *, llvm::Value *> made;
              for (unsigned k = 0; k < phi.getNumIncomingValues(); ++k) {
                llvm::BasicBlock *pred = phi.getIncomingBlock(k);
                llvm::Value *&x = made[pred];
                if (!x)
                  x = llvm::ExtractValueInst::Create(phi.getIncomingValue(k), {i}, "",
                                                     pred->getTerminator()->getIterator());
                field->addIncoming(x, pred);
              }
            }
            ev->replaceAllUsesWith(field);
            ev->eraseFromParent();
          }
          phi.eraseFromParent();
          changed = again = true;
        }
      }
    }
    // Extractvalues next to the instruction that defines their aggregate.
    for (llvm::BasicBlock &bb : f) {
      for (llvm::Instruction &inst : llvm::make_early_inc_range(bb)) {
        auto *ev = llvm::dyn_cast<llvm::ExtractValueInst>(&inst);
        if (!ev)
          continue;
        auto *def = llvm::dyn_cast<llvm::Instruction>(ev->getAggregateOperand());
        if (!def || def->getParent() == ev->getParent())
          continue;
        if (llvm::isa<llvm::PHINode>(def))
          ev->moveBefore(def->getParent()->getFirstNonPHIIt());
        else if (!def->isTerminator())
          ev->moveAfter(def);
        else
          continue;
        changed = true;
      }
    }
    return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
  }
};
} // namespace

// The `#nvvm.target` serializer of `gpu-module-to-binary` with two changes: the LLVM pass
// pipeline at -O3 is tilec's own (`pipeline`, a new-pass-manager text pipeline as `opt
// -passes=` reads it) instead of LLVM's `default<O3>`, and the result is the PTX text or
// the optimised LLVM IR as text. At -O0/-O1/-O2, or with an empty `pipeline`, MLIR's own
// `default<On>` is used. Errors go to the MLIR context's diagnostic handler.
namespace {
class TilecSerializer : public mlir::NVVM::SerializeGPUModuleBase {
public:
  TilecSerializer(mlir::Operation &module, mlir::NVVM::NVVMTargetAttr target,
                  llvm::StringRef pipeline, bool llvmIr)
      : SerializeGPUModuleBase(module, target), pipeline(pipeline), llvmIr(llvmIr) {}

  mlir::LogicalResult optimizeModule(llvm::Module &module, int optLevel) override {
    if (pipeline.empty() || optLevel != 3)
      return ModuleToObject::optimizeModule(module, optLevel);
    llvm::FailureOr<llvm::TargetMachine *> tm = getOrCreateTargetMachine();
    if (mlir::failed(tm))
      return mlir::emitError(getOperation().getLoc(), "no LLVM target machine for ") << triple;
    (*tm)->setOptLevel(llvm::CodeGenOptLevel::Aggressive);
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(*tm);
    pb.registerPipelineParsingCallback(
        [](llvm::StringRef name, llvm::FunctionPassManager &fpm,
           llvm::ArrayRef<llvm::PassBuilder::PipelineElement>) {
          if (name != "tilec-split-aggregates")
            return false;
          fpm.addPass(SplitAggregates());
          return true;
        });
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm;
    if (llvm::Error e = pb.parsePassPipeline(mpm, pipeline))
      return mlir::emitError(getOperation().getLoc(), "LLVM pass pipeline '")
             << pipeline << "': " << llvm::toString(std::move(e));
    mpm.run(module, mam);
    return mlir::success();
  }

  llvm::FailureOr<llvm::SmallVector<char, 0>> moduleToObject(llvm::Module &module) override {
    if (llvmIr) {
      std::string text;
      llvm::raw_string_ostream os(text);
      module.print(os, nullptr);
      return llvm::SmallVector<char, 0>(text.begin(), text.end());
    }
    llvm::FailureOr<llvm::TargetMachine *> tm = getOrCreateTargetMachine();
    if (mlir::failed(tm))
      return mlir::emitError(getOperation().getLoc(), "no LLVM target machine for ") << triple;
    // Code generation at most at CodeGenOptLevel::Default. At Aggressive, NVPTX runs GVN
    // twice in its IR passes (EarlyCSE at Default): 5-20 % of a dot-free kernel's compile,
    // and on every example the PTX has as many instructions or fewer at Default.
    if ((*tm)->getOptLevel() == llvm::CodeGenOptLevel::Aggressive)
      (*tm)->setOptLevel(llvm::CodeGenOptLevel::Default);
    auto isa = translateModuleToISA(module, **tm,
                                    [&] { return mlir::emitError(getOperation().getLoc()); });
    if (mlir::failed(isa))
      return mlir::failure();
    return llvm::SmallVector<char, 0>(isa->begin(), isa->end());
  }

private:
  std::string pipeline;
  bool llvmIr;
};
} // namespace

// Orders the use list of every block under `op` as MLIR's parser would have made it from
// the printed text: the parser adds each use at the front of the list as it reads the
// branch, so the list runs from the last branch in the text to the first. The translation
// to LLVM IR takes a phi's incoming values in that order (`Block::getPredecessors`), so a
// module built in memory and the same module printed and parsed (the MLIR stage in a
// child process) give the same LLVM IR only with this.
extern "C" void tilecOrderBlockUses(MlirOperation op) {
  unwrap(op)->walk([](mlir::Region *region) {
    llvm::DenseMap<mlir::Block *, unsigned> index;
    unsigned n = 0;
    for (mlir::Block &b : *region)
      index[&b] = n++;
    for (mlir::Block &b : *region) {
      // A use's place in the text: its branch's block, then its operand.
      llvm::SmallVector<std::pair<unsigned, unsigned>, 4> at;
      for (mlir::BlockOperand &use : b.getUses())
        at.push_back({index.lookup(use.getOwner()->getBlock()), use.getOperandNumber()});
      if (at.size() < 2)
        continue;
      llvm::SmallVector<unsigned, 4> order(at.size());
      std::iota(order.begin(), order.end(), 0u);
      llvm::stable_sort(order, [&](unsigned x, unsigned y) { return at[x] > at[y]; });
      llvm::SmallVector<unsigned, 4> indices(at.size());
      for (unsigned k = 0; k < order.size(); ++k)
        indices[order[k]] = k;
      b.shuffleUseList(indices);
    }
  });
}

// Serializes the `gpu.module` op `module` (with one `#nvvm.target`, as nvvm-attach-target
// sets it) to PTX or, with `llvmIr`, to optimised LLVM IR text; `sink` receives the bytes.
// False on error, reported as MLIR diagnostics.
extern "C" bool tilecSerializeGpuModule(MlirOperation module, const char *pipeline, bool llvmIr,
                                        void (*sink)(const char *, size_t, void *),
                                        void *user) {
  auto gpuModule = llvm::dyn_cast<mlir::gpu::GPUModuleOp>(unwrap(module));
  if (!gpuModule)
    return false;
  mlir::ArrayAttr targets = gpuModule.getTargetsAttr();
  auto target = targets && targets.size() == 1
                    ? llvm::dyn_cast<mlir::NVVM::NVVMTargetAttr>(targets[0])
                    : mlir::NVVM::NVVMTargetAttr();
  if (!target) {
    mlir::emitError(gpuModule.getLoc(), "expected exactly one #nvvm.target");
    return false;
  }
  // A diagnostic names the op's location; MLIR would also print the whole gpu.module.
  gpuModule->getContext()->printOpOnDiagnostic(false);
  TilecSerializer::init();
  TilecSerializer serializer(*gpuModule, target, pipeline ? pipeline : "", llvmIr);
  std::optional<llvm::SmallVector<char, 0>> out = serializer.run();
  if (!out)
    return false;
  sink(out->data(), out->size(), user);
  return true;
}

// melior binds all of MLIR's C API, so the linker pulls in every object file that those
// bindings name, even where tilec never calls them, and with each file its static
// initializers, which run at every start (cl::opt registrations and the pages they touch).
// Two such files pull in most of MLIR and LLVM: RegisterEverything.cpp (`mlirRegisterAll*`:
// every MLIR pass and dialect, and through them every LLVM target) and the execution
// engine (a JIT, with the host's target). tilec registers only what it uses (above) and
// runs no JIT, so the definitions below take the place of MLIR's. Nothing in tilec calls
// them; a call would be a bug, reported as such.
[[noreturn]] static void notLinked(const char *name) {
  llvm::errs() << "tilec internal error: " << name
               << " is not linked into tilec (lowering/cpp/register.cpp)\n";
  std::abort();
}
extern "C" void mlirRegisterAllDialects(MlirDialectRegistry) {
  notLinked("mlirRegisterAllDialects");
}
extern "C" void mlirRegisterAllLLVMTranslations(MlirContext) {
  notLinked("mlirRegisterAllLLVMTranslations");
}
extern "C" void mlirRegisterAllPasses() { notLinked("mlirRegisterAllPasses"); }
extern "C" MlirExecutionEngine mlirExecutionEngineCreate(MlirModule, int, int,
                                                         const MlirStringRef *, bool, bool) {
  notLinked("mlirExecutionEngineCreate");
}
extern "C" void mlirExecutionEngineInitialize(MlirExecutionEngine) {
  notLinked("mlirExecutionEngineInitialize");
}
extern "C" void mlirExecutionEngineDestroy(MlirExecutionEngine) {
  notLinked("mlirExecutionEngineDestroy");
}
extern "C" MlirLogicalResult mlirExecutionEngineInvokePacked(MlirExecutionEngine, MlirStringRef,
                                                             void **) {
  notLinked("mlirExecutionEngineInvokePacked");
}
extern "C" void *mlirExecutionEngineLookupPacked(MlirExecutionEngine, MlirStringRef) {
  notLinked("mlirExecutionEngineLookupPacked");
}
extern "C" void *mlirExecutionEngineLookup(MlirExecutionEngine, MlirStringRef) {
  notLinked("mlirExecutionEngineLookup");
}
extern "C" void mlirExecutionEngineRegisterSymbol(MlirExecutionEngine, MlirStringRef, void *) {
  notLinked("mlirExecutionEngineRegisterSymbol");
}
extern "C" void mlirExecutionEngineDumpToObjectFile(MlirExecutionEngine, MlirStringRef) {
  notLinked("mlirExecutionEngineDumpToObjectFile");
}
