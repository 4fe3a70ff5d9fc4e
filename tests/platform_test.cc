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
  const CommitMemory commit = AvailableCommitMemory();
#ifdef _WIN32
  EXPECT_TRUE(commit.limited);  // Windows charges every private byte
  EXPECT_GT(commit.available, 0u);
#else
  int mode = 0;
  if (std::FILE* f = std::fopen("/proc/sys/vm/overcommit_memory", "r")) {
    if (std::fscanf(f, "%d", &mode) != 1) mode = 0;
    std::fclose(f);
  }
  EXPECT_EQ(commit.limited, mode == 2);
#endif
}

TEST(Platform, WorkersSpreadOverProcessorGroupsInProportion) {
  // One group (every machine under 65 logical processors): all in group 0.
  const int one[] = {16};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(ProcessorGroupForWorker(i, 16, one), 0);
  // Two full groups of 64 (a 128-thread server): 64 workers each, in order.
  const int two[] = {64, 64};
  int counts[2] = {0, 0};
  for (int i = 0; i < 128; ++i) ++counts[ProcessorGroupForWorker(i, 128, two)];
  EXPECT_EQ(counts[0], 64);
  EXPECT_EQ(counts[1], 64);
  EXPECT_EQ(ProcessorGroupForWorker(63, 128, two), 0);
  EXPECT_EQ(ProcessorGroupForWorker(64, 128, two), 1);
  // Uneven groups (64 + 8 = 72 processors), fewer workers than processors:
  // in proportion, 8 of 9 in the large group.
  const int uneven[] = {64, 8};
  int c2[2] = {0, 0};
  for (int i = 0; i < 9; ++i) ++c2[ProcessorGroupForWorker(i, 9, uneven)];
  EXPECT_EQ(c2[0], 8);
  EXPECT_EQ(c2[1], 1);
  // Two workers on two groups: one each, not both in the first.
  EXPECT_EQ(ProcessorGroupForWorker(0, 2, two), 0);
  EXPECT_EQ(ProcessorGroupForWorker(1, 2, two), 1);
  // Out of range and degenerate input stays in range.
  EXPECT_EQ(ProcessorGroupForWorker(500, 128, two), 1);
  EXPECT_EQ(ProcessorGroupForWorker(-1, 128, two), 0);
  EXPECT_EQ(ProcessorGroupForWorker(0, 0, two), 0);
  const int empty[] = {0, 0};
  EXPECT_EQ(ProcessorGroupForWorker(3, 4, empty), 0);
  // Placing a thread on this machine leaves it able to run (a no-op here
  // unless the machine has several groups).
  std::thread t([] { PlaceThreadInProcessorGroup(1, 2); });
  t.join();
}

TEST(Platform, LargePagesAreAlignedZeroedAndWritableOrRefused) {
  const LargePages lp = QueryLargePages();
  if (lp.page_bytes == 0) {
    EXPECT_FALSE(lp.why.empty());  // says what to change
    GTEST_SKIP() << "no large pages here: " << lp.why;
  }
  EXPECT_GE(lp.page_bytes, 4096u);
  EXPECT_EQ(lp.page_bytes & (lp.page_bytes - 1), 0u);
  const uint64_t bytes = lp.page_bytes + lp.page_bytes / 2 + 3;  // a tail past whole pages
  void* p = AllocateLargePages(bytes, lp.page_bytes);
  if (!p) GTEST_SKIP() << "the OS refused large pages now (fragmented memory or no privilege): the caller falls back";
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % lp.page_bytes, 0u);
  uint8_t* b = static_cast<uint8_t*>(p);
  const uint64_t rounded = 2 * lp.page_bytes;  // what the caller may touch: whole pages
  uint64_t nonzero = 0;
  for (uint64_t i = 0; i < rounded; i += 512) nonzero += b[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  for (uint64_t i = 0; i < rounded; ++i) b[i] = static_cast<uint8_t>(i * 7);
  EXPECT_EQ(b[rounded - 1], static_cast<uint8_t>((rounded - 1) * 7));
  FreeLargePages(p, bytes, lp.page_bytes);
  EXPECT_EQ(AllocateLargePages(0, lp.page_bytes), nullptr);
  EXPECT_EQ(AllocateLargePages(bytes, 0), nullptr);
}

}  // namespace
}  // namespace strata
