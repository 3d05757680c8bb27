#pragma once
// A temporary file's path for the tests, removed (with its ".tmp" sibling, where a writer
// renames from one) when the object goes.

#include <unistd.h>

#include <cstdio>
#include <string>

namespace sgdc::test_support {

/// A fresh path for a temporary file, removed when the object goes.
class TempPath {
 public:
  explicit TempPath(const std::string& stem)
      : path_("/tmp/sgdc-" + stem + "-" + std::to_string(::getpid()) + "-" +
              std::to_string(counter()++)) {}
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  ~TempPath() {
    std::remove(path_.c_str());
    std::remove((path_ + ".tmp").c_str());
  }
  const std::string& str() const { return path_; }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string path_;
};

}  // namespace sgdc::test_support
