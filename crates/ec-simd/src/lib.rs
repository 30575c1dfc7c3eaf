//! ec-simd: work in progress.
