//! The 64 steps of the MD5 compression function (RFC 1321, section 3.4),
//! written once and expanded by every kernel with its own step macros.
//!
//! `md5_rounds!(ff, gg, hh, ii, a, b, c, d, m)` invokes the four step
//! macros (rounds 1 to 4) as `ff!(a, b, c, d, m, index, constant, shift)`,
//! rotating the roles of the four state variables as the RFC does. Each step
//! computes `a = b + rotl(a + F(b, c, d) + m[index] + constant, shift)` with
//! its round's function. The constants are `floor(2^32 * |sin(i + 1)|)`.

/// Expands to the 64 MD5 steps; see the module documentation.
macro_rules! md5_rounds {
    ($ff:ident, $gg:ident, $hh:ident, $ii:ident, $a:ident, $b:ident, $c:ident, $d:ident, $m:ident) => {
        $ff!($a, $b, $c, $d, $m, 0, 0xd76aa478, 7);
        $ff!($d, $a, $b, $c, $m, 1, 0xe8c7b756, 12);
        $ff!($c, $d, $a, $b, $m, 2, 0x242070db, 17);
        $ff!($b, $c, $d, $a, $m, 3, 0xc1bdceee, 22);
        $ff!($a, $b, $c, $d, $m, 4, 0xf57c0faf, 7);
        $ff!($d, $a, $b, $c, $m, 5, 0x4787c62a, 12);
        $ff!($c, $d, $a, $b, $m, 6, 0xa8304613, 17);
        $ff!($b, $c, $d, $a, $m, 7, 0xfd469501, 22);
        $ff!($a, $b, $c, $d, $m, 8, 0x698098d8, 7);
        $ff!($d, $a, $b, $c, $m, 9, 0x8b44f7af, 12);
        $ff!($c, $d, $a, $b, $m, 10, 0xffff5bb1, 17);
        $ff!($b, $c, $d, $a, $m, 11, 0x895cd7be, 22);
        $ff!($a, $b, $c, $d, $m, 12, 0x6b901122, 7);
        $ff!($d, $a, $b, $c, $m, 13, 0xfd987193, 12);
        $ff!($c, $d, $a, $b, $m, 14, 0xa679438e, 17);
        $ff!($b, $c, $d, $a, $m, 15, 0x49b40821, 22);
        $gg!($a, $b, $c, $d, $m, 1, 0xf61e2562, 5);
        $gg!($d, $a, $b, $c, $m, 6, 0xc040b340, 9);
        $gg!($c, $d, $a, $b, $m, 11, 0x265e5a51, 14);
        $gg!($b, $c, $d, $a, $m, 0, 0xe9b6c7aa, 20);
        $gg!($a, $b, $c, $d, $m, 5, 0xd62f105d, 5);
        $gg!($d, $a, $b, $c, $m, 10, 0x02441453, 9);
        $gg!($c, $d, $a, $b, $m, 15, 0xd8a1e681, 14);
        $gg!($b, $c, $d, $a, $m, 4, 0xe7d3fbc8, 20);
        $gg!($a, $b, $c, $d, $m, 9, 0x21e1cde6, 5);
        $gg!($d, $a, $b, $c, $m, 14, 0xc33707d6, 9);
        $gg!($c, $d, $a, $b, $m, 3, 0xf4d50d87, 14);
        $gg!($b, $c, $d, $a, $m, 8, 0x455a14ed, 20);
        $gg!($a, $b, $c, $d, $m, 13, 0xa9e3e905, 5);
        $gg!($d, $a, $b, $c, $m, 2, 0xfcefa3f8, 9);
        $gg!($c, $d, $a, $b, $m, 7, 0x676f02d9, 14);
        $gg!($b, $c, $d, $a, $m, 12, 0x8d2a4c8a, 20);
        $hh!($a, $b, $c, $d, $m, 5, 0xfffa3942, 4);
        $hh!($d, $a, $b, $c, $m, 8, 0x8771f681, 11);
        $hh!($c, $d, $a, $b, $m, 11, 0x6d9d6122, 16);
        $hh!($b, $c, $d, $a, $m, 14, 0xfde5380c, 23);
        $hh!($a, $b, $c, $d, $m, 1, 0xa4beea44, 4);
        $hh!($d, $a, $b, $c, $m, 4, 0x4bdecfa9, 11);
        $hh!($c, $d, $a, $b, $m, 7, 0xf6bb4b60, 16);
        $hh!($b, $c, $d, $a, $m, 10, 0xbebfbc70, 23);
        $hh!($a, $b, $c, $d, $m, 13, 0x289b7ec6, 4);
        $hh!($d, $a, $b, $c, $m, 0, 0xeaa127fa, 11);
        $hh!($c, $d, $a, $b, $m, 3, 0xd4ef3085, 16);
        $hh!($b, $c, $d, $a, $m, 6, 0x04881d05, 23);
        $hh!($a, $b, $c, $d, $m, 9, 0xd9d4d039, 4);
        $hh!($d, $a, $b, $c, $m, 12, 0xe6db99e5, 11);
        $hh!($c, $d, $a, $b, $m, 15, 0x1fa27cf8, 16);
        $hh!($b, $c, $d, $a, $m, 2, 0xc4ac5665, 23);
        $ii!($a, $b, $c, $d, $m, 0, 0xf4292244, 6);
        $ii!($d, $a, $b, $c, $m, 7, 0x432aff97, 10);
        $ii!($c, $d, $a, $b, $m, 14, 0xab9423a7, 15);
        $ii!($b, $c, $d, $a, $m, 5, 0xfc93a039, 21);
        $ii!($a, $b, $c, $d, $m, 12, 0x655b59c3, 6);
        $ii!($d, $a, $b, $c, $m, 3, 0x8f0ccc92, 10);
        $ii!($c, $d, $a, $b, $m, 10, 0xffeff47d, 15);
        $ii!($b, $c, $d, $a, $m, 1, 0x85845dd1, 21);
        $ii!($a, $b, $c, $d, $m, 8, 0x6fa87e4f, 6);
        $ii!($d, $a, $b, $c, $m, 15, 0xfe2ce6e0, 10);
        $ii!($c, $d, $a, $b, $m, 6, 0xa3014314, 15);
        $ii!($b, $c, $d, $a, $m, 13, 0x4e0811a1, 21);
        $ii!($a, $b, $c, $d, $m, 4, 0xf7537e82, 6);
        $ii!($d, $a, $b, $c, $m, 11, 0xbd3af235, 10);
        $ii!($c, $d, $a, $b, $m, 2, 0x2ad7d2bb, 15);
        $ii!($b, $c, $d, $a, $m, 9, 0xeb86d391, 21);
    };
}

pub(crate) use md5_rounds;
