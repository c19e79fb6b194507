//===- ReplayMain.cpp - Runs a fuzz target's body over saved inputs -------===//
//
// The `*-replay` executables link one fuzz target's LLVMFuzzerTestOneInput
// with this main instead of libFuzzer, so the normal build (any compiler, no
// sanitizers needed) runs the saved crash inputs and seeds as a test:
//
//   kiln-fuzz-npy-replay [--expect-crash] FILE|DIR...
//
// Each FILE, and each regular file directly inside each DIR, is read and
// passed to the target once. A crash fails the run (the target aborts on a
// broken invariant); a missing path or no input at all is an error too, so a
// test cannot pass by replaying nothing.
//
// --expect-crash is for the inputs of bugs not fixed yet
// (regressions/<target>/open/): each input runs in a child process, and the
// run succeeds only if every child crashes (dies by a signal or exits
// non-zero, as after a sanitizer's report). An input that
// no longer crashes is reported, to be moved up to regressions/<target>/.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc,
                                                          char ***argv);

static bool isDirectory(const std::string &path, bool &exists) {
  struct stat st;
  exists = stat(path.c_str(), &st) == 0;
  return exists && S_ISDIR(st.st_mode);
}

/// Runs the target on `bytes` in a child; true if the child crashed: died by
/// a signal, or exited non-zero (a sanitizer's report ends in exit(1); the
/// body itself always returns, and the child then exits 0).
static bool crashesInChild(const std::vector<uint8_t> &bytes) {
  std::fflush(nullptr);
  pid_t child = fork();
  if (child == 0) {
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    _exit(0);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child)
    return false;
  return WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status));
}

int main(int argc, char **argv) {
  bool expectCrash = argc > 1 && std::string(argv[1]) == "--expect-crash";
  if (argc < 2 + int(expectCrash)) {
    std::fprintf(stderr, "usage: %s [--expect-crash] FILE|DIR...\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1 + int(expectCrash); i < argc; ++i) {
    std::string path = argv[i];
    bool exists = false;
    if (!isDirectory(path, exists)) {
      if (!exists) {
        std::fprintf(stderr, "%s: error: no such file or directory: %s\n",
                     argv[0], path.c_str());
        return 2;
      }
      files.push_back(path);
      continue;
    }
    std::vector<std::string> entries;
    if (DIR *dir = opendir(path.c_str())) {
      while (dirent *entry = readdir(dir)) {
        std::string child = path + "/" + entry->d_name;
        bool childExists = false;
        if (entry->d_name[0] != '.' && !isDirectory(child, childExists) &&
            childExists)
          entries.push_back(child);
      }
      closedir(dir);
    }
    std::sort(entries.begin(), entries.end());
    files.insert(files.end(), entries.begin(), entries.end());
  }
  if (files.empty()) {
    std::fprintf(stderr, "%s: error: no inputs to replay\n", argv[0]);
    return 2;
  }
  for (const std::string &file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: error: cannot read %s\n", argv[0],
                   file.c_str());
      return 2;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(),
                 bytes.size());
    if (!expectCrash) {
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    } else if (!crashesInChild(bytes)) {
      std::fprintf(stderr,
                   "%s: error: %s no longer crashes: move it out of open/ "
                   "into its target's regressions folder\n",
                   argv[0], file.c_str());
      return 1;
    }
  }
  std::printf("replayed %zu inputs%s\n", files.size(),
              expectCrash ? ", each crashed as expected" : "");
  return 0;
}
