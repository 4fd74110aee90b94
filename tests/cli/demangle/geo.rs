// SPDX-License-Identifier: BSD-3-Clause
// A Rust program whose hot function is a method of a generic type in a
// module, kept out of line: its symbol is mangled the legacy way or, with
// -C symbol-mangling-version=v0, the v0 way.
mod geo {
    pub struct Pt<T> {
        pub x: T,
    }

    impl Pt<u64> {
        #[inline(never)]
        pub fn spin(&self, n: u64) -> u64 {
            let mut a = self.x;
            for i in 0..n {
                a = a.wrapping_mul(31).wrapping_add(i);
                unsafe { std::ptr::write_volatile(&mut crate::SINK, a) };
            }
            a
        }
    }
}

static mut SINK: u64 = 0;

fn main() {
    let n = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100_000_000);
    let p = geo::Pt { x: 7u64 };
    println!("{}", p.spin(n));
}
