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
                                      const std::function<void(SyntheticModelSpec&)>& tweak,
                                      const std::function<void(GgufBuilder&)>& edit) {
  SyntheticModelSpec s;
  s.arch = arch;
  s.hp = TinyHParams(arch);
  s.seed = seed;
  if (tweak) tweak(s);
  STRATA_ASSIGN_OR_RETURN(GgufBuilder b, BuildSyntheticModel(s));
  if (edit) edit(b);
  const std::string gguf = dir + "/" + name + ".gguf", pack = dir + "/" + name + ".strata";
  STRATA_RETURN_IF_ERROR(b.WriteFile(gguf));
  PackOptions o;
  o.probe = false;
  STRATA_RETURN_IF_ERROR(PackFile(gguf, pack, o).status());
  return OpenPack(pack);
}

Result<std::string> ExpertTypePack(const std::string& dir, const std::string& name, Arch arch, GgmlType expert_type,
                                   DecodeCopyType copies) {
  SyntheticModelSpec s;
  s.arch = arch;
  s.hp = TinyHParams(arch);
  s.type_by_role = {{TensorRole::kFfnGateExps, expert_type}, {TensorRole::kFfnUpExps, expert_type},
                    {TensorRole::kFfnDownExps, expert_type}};
  STRATA_ASSIGN_OR_RETURN(GgufBuilder b, BuildSyntheticModel(s));
  const std::string gguf = dir + "/" + name + ".gguf", pack = dir + "/" + name + ".strata";
  STRATA_RETURN_IF_ERROR(b.WriteFile(gguf));
  PackOptions o;
  o.profile_tokens = 200;
  o.decode_copies = copies;
  STRATA_RETURN_IF_ERROR(PackFile(gguf, pack, o).status());
  return pack;
}

}  // namespace strata::testing
