//! `cargo xtask bench hash [--gib N]`: what release-grade full re-hashing costs. `package`,
//! `verify`, `--require-fresh` and every HTP load re-hash their files in full instead of
//! trusting (size, mtime); this measures that against the memo's shortcut on a generated file
//! (pseudo-random bytes, so nothing compresses or dedups), in the same run, and extrapolates
//! to a bundle of a given size.

use std::io::Write as _;
use std::time::Instant;

use anyhow::Result;

use super::super::{Ctx, Outcome};
use xtask_base::hashing::HashMemo;

#[derive(clap::Args)]
pub struct BenchHash {
    /// Size of the generated file, GiB.
    #[arg(long, default_value_t = 2)]
    gib: u64,
    /// Bundle size to extrapolate to, GB (the real bundle: ONNX + external data + binaries).
    #[arg(long, default_value_t = 40)]
    bundle_gb: u64,
}

impl BenchHash {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        let dir = xtask_base::project::scratch_dir(&ctx.root, "bench/hash");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("data-{}gib.bin", self.gib));
        let bytes = self.gib << 30;
        if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(bytes) {
            xtask_base::errln!(
                "writing {} GiB of pseudo-random bytes to {} ...",
                self.gib,
                xtask_base::project::rel(&ctx.root, &path)
            );
            let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            let mut block = vec![0u8; 1 << 20];
            for _ in 0..(bytes >> 20) {
                for chunk in block.chunks_exact_mut(8) {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    chunk.copy_from_slice(&state.to_le_bytes());
                }
                f.write_all(&block)?;
            }
            f.flush()?;
        }
        let mut memo = HashMemo::default();
        memo.sha256(&path)?; // fills the memo (and the page cache)
        let started = Instant::now();
        memo.sha256(&path)?;
        let memo_s = started.elapsed().as_secs_f64();
        let started = Instant::now();
        HashMemo::full().sha256(&path)?;
        let full_s = started.elapsed().as_secs_f64();
        let gb_per_s = bytes as f64 / 1e9 / full_s;
        xtask_base::outln!(
            "full re-hash of {} GiB: {full_s:.2} s ({gb_per_s:.2} GB/s, page cache warm); memo lookup: {:.3} ms ({:.0}x faster)",
            self.gib,
            memo_s * 1e3,
            full_s / memo_s.max(1e-9)
        );
        xtask_base::outln!(
            "a {} GB bundle: about {:.0} s per full check at this rate (package, verify, --require-fresh; an HTP load re-hashes one component's inputs)",
            self.bundle_gb,
            self.bundle_gb as f64 / gb_per_s
        );
        Ok(Outcome::Success)
    }
}
