// SPDX-License-Identifier: BSD-3-Clause
// std::sort with a lambda: gcc gives the instances of std::sort's templates
// that hold the lambda no linkage name, so their inlined frames are named
// from their DWARF scopes (test_demangle.py).
#include <algorithm>
#include <cstdlib>
#include <vector>
namespace geo { struct Pt { long x, y; long norm() const { return x * x + y * y; } }; }
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  std::vector<geo::Pt> v(n);
  unsigned x = 1;
  for (int round = 0; round < 4; round++) {
    for (auto &e : v) { e.x = (int)(x = x * 1103515245u + 12345u) % 1000; e.y = (int)(x = x * 1103515245u + 12345u) % 1000; }
    std::sort(v.begin(), v.end(), [](const geo::Pt &a, const geo::Pt &b) { return a.norm() < b.norm(); });
  }
  return (int)(v[n / 2].x & 1);
}
