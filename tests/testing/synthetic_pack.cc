#include "tests/testing/synthetic_pack.h"

#include "tests/testing/pack_edit.h"

namespace strata::testing {

Result<OpenedModel> OpenPack(const std::string& path) {
  OpenedModel m;
  m.path = path;
  STRATA_ASSIGN_OR_RETURN(m.pack, Pack::Open(path));
  STRATA_ASSIGN_OR_RETURN(Model model, Model::Create(*m.pack));
  m.model = std::make_unique<Model>(std::move(model));
  return m;
}

Result<OpenedModel> MakeSyntheticPack(Arch arch, const std::string& dir, const std::string& name, uint64_t seed,
                                      const std::function<void(SyntheticModelSpec&)>& tweak) {
  SyntheticModelSpec s;
  s.arch = arch;
  s.hp = TinyHParams(arch);
  s.seed = seed;
  if (tweak) tweak(s);
  STRATA_ASSIGN_OR_RETURN(GgufBuilder b, BuildSyntheticModel(s));
  const std::string gguf = dir + "/" + name + ".gguf", pack = dir + "/" + name + ".strata";
  STRATA_RETURN_IF_ERROR(b.WriteFile(gguf));
  PackOptions o;
  o.probe = false;
  STRATA_RETURN_IF_ERROR(PackFile(gguf, pack, o).status());
  return OpenPack(pack);
}

}  // namespace strata::testing
