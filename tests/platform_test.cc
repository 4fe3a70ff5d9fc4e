// The platform layer (runtime/base/platform.h, mapped_file.h, atomic_file.h)
// on what Windows users meet first: files past 4 GiB, folders named in any
// script, stopping a server without a console. Runs in the Linux builds and
// in the Windows build under Wine alike.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "runtime/base/atomic_file.h"
#include "runtime/base/mapped_file.h"
#include "runtime/base/platform.h"
#include "tests/gguf_writer/synthetic_model.h"
#include "tests/testing/run_command.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A folder for a UTF-8 path (fs::path from a narrow string would read it in
// the ANSI code page on Windows).
void MakeDir(const std::string& utf8) {
  const std::u8string u(reinterpret_cast<const char8_t*>(utf8.data()), utf8.size());
  fs::create_directories(fs::path(u));
}

TEST(Platform, MapsAFileLargerThan4GiB) {
  const std::string path = testing::ScratchDir("platform_4g") + "/big.bin";
  const uint64_t size = (uint64_t{9} << 29) + 8;  // 4.5 GiB + 8: past every 32-bit size
  {
    // Only the first and the last bytes are written: sparse on Linux file
    // systems (and under Wine); NTFS fills the gap with zeros.
    std::FILE* f = OpenFile(path, "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite("HEAD", 1, 4, f), 4u);
    ASSERT_TRUE(SeekFile(f, size - 4, false));
    ASSERT_EQ(std::fwrite("TAIL", 1, 4, f), 4u);
    ASSERT_EQ(std::fclose(f), 0);
  }
  auto size_seen = FileSize(path);
  ASSERT_TRUE(size_seen.ok()) << size_seen.status().ToString();
  EXPECT_EQ(*size_seen, size);
  auto m = MappedFile::Open(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->size(), size);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data()), 4), "HEAD");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data() + size - 4), 4), "TAIL");
  EXPECT_EQ(m->data()[uint64_t{1} << 32], 0);  // a byte past 4 GiB, in the hole
  m = MappedFile();
  EXPECT_TRUE(RemoveFile(path));
}

TEST(Platform, FilesInFoldersNamedInAnyScript) {
  const std::string dir = testing::ScratchDir("platform_utf8") + "/模型 café Ελλάδα";
  MakeDir(dir);
  const std::string path = dir + "/ünïcødé.bin";
  auto w = AtomicFileWriter::Create(path);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE(w->Write({reinterpret_cast<const uint8_t*>("strata"), 6}).ok());
  ASSERT_TRUE(w->Commit().ok());
  EXPECT_TRUE(FileExists(path));
  auto m = MappedFile::Open(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data()), m->size()), "strata");
  m = MappedFile();
  std::string why;
  EXPECT_TRUE(RenameReplacing(path, dir + "/二.bin", &why)) << why;
  EXPECT_FALSE(FileExists(path));
  EXPECT_TRUE(FileExists(dir + "/二.bin"));
  auto missing = MappedFile::Open(dir + "/なし.bin");
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().ToString(), HasSubstr("なし.bin"));
}

// The three programs take UTF-8 paths on their command line (on Windows the
// command line is rebuilt from its UTF-16 form) and print them back intact.
TEST(Platform, TheProgramsPackValidateAndRunInAFolderNamedInChinese) {
  const std::string dir = testing::ScratchDir("platform_cli") + "/模型 José";
  MakeDir(dir);
  testing::SyntheticModelSpec s;
  s.hp = testing::TinyQwen3MoeHParams();
  auto b = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_TRUE(b->WriteFile(dir + "/模型.gguf").ok());
  auto pack = testing::RunProgram("strata-pack", {dir + "/模型.gguf", "-o", dir + "/模型.strata", "--no-profile"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  auto validate = testing::RunProgram("strata-validate", {dir + "/模型.strata"});
  EXPECT_EQ(validate.exit_code, 0) << validate.out << validate.err;
  EXPECT_THAT(validate.out, HasSubstr("模型 José/模型.strata"));
  auto run = testing::RunProgram("strata-run", {dir + "/模型.strata", "--tokens", "1,2,3", "-n", "4", "--print-ids"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  auto missing = testing::RunProgram("strata-run", {dir + "/不在.strata", "-p", "hi"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("不在.strata"));
}

std::atomic<int> g_stops{0};
extern "C" void CountStop(int) { g_stops.fetch_add(1); }

TEST(Platform, RequestStopReachesTheStopHandler) {
  InstallStopHandler(CountStop);
  const int before = g_stops.load();
  ASSERT_TRUE(RequestStop(ProcessId()));
  for (int i = 0; i < 500 && g_stops.load() == before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(g_stops.load(), before + 1);
  EXPECT_FALSE(RequestStop(0x7ffffff0));  // no such process
}

TEST(Platform, MachineFigures) {
  EXPECT_GE(CpuCount(), 1);
  EXPECT_GT(TotalMemoryBytes(), 0u);
  EXPECT_GT(AvailableMemoryBytes(), 0u);
  EXPECT_LE(AvailableMemoryBytes(), TotalMemoryBytes());
  const uint64_t page = PageBytes();
  EXPECT_GE(page, 4096u);
  EXPECT_EQ(page & (page - 1), 0u);
  EXPECT_FALSE(ExecutablePath().empty());
  EXPECT_THAT(ExecutablePath(), HasSubstr("platform_test"));
}

}  // namespace
}  // namespace strata
