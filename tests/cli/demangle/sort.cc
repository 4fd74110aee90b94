// SPDX-License-Identifier: BSD-3-Clause
// Sorts ints and strings: std::sort's template functions, out of line and
// inlined, whose symbols carry their return types (test_demangle.py).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  std::vector<int> v(n);
  std::vector<std::string> s(n / 8);
  unsigned x = 1;
  for (int round = 0; round < 4; round++) {
    for (auto &e : v) e = (int)(x = x * 1103515245u + 12345u);
    std::sort(v.begin(), v.end());
    for (auto &e : s) e = std::to_string(x = x * 1103515245u + 12345u);
    std::sort(s.begin(), s.end());
  }
  return v[n / 2] & 1;
}
