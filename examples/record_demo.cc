// SPDX-License-Identifier: BSD-3-Clause
// A C++ program whose hot functions have the names C++ gives: a method of a
// class template in a namespace, a function template, and a lambda, each
// kept out of line so that its samples land in it. `cflame record` shows
// them as the source names them: ns::Klass<int>::method(int),
// main::{lambda(long)#1}::operator()(long) const. Recorded by scripts/demo
// and tests/cli/test_demangle.py.
#include <cstdio>
#include <cstdlib>

namespace ns {

template <typename T>
struct Klass {
  T seed;
  __attribute__((noinline)) T method(int n) {
    T acc = seed;
    for (int i = 0; i < n; i++) acc = acc * 31 + static_cast<T>(i);
    return acc;
  }
};

template <typename T>
__attribute__((noinline)) T twice(T (*f)(T), T x) {
  return f(f(x));
}

}  // namespace ns

static volatile long sink;

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 100000000;
  ns::Klass<int> k{7};
  auto spin = [n](long x) __attribute__((noinline)) {
    for (int i = 0; i < n; i++) x = x * 17 + i;
    return x;
  };
  sink = k.method(n);
  sink = spin(sink);
  sink = ns::twice<long>([](long x) { return x + 1; }, sink);
  std::printf("%ld\n", (long)sink);
  return 0;
}
