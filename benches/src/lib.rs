//! Benchmarks live in `benches/`; this library is empty on purpose (criterion needs a package).
