//! `cargo xtask bench build`: cold build vs no-op rebuild of `build-ctx`, for the tiny model
//! and for a hundred-megabyte-class ONNX (an MLP with ~100 MB of external weights, generated
//! here). Each figure is printed as a ratio against the cold build measured in the same run.
//! `--full-width` measures `--jobs 2` against `--jobs 1` instead (`build_full_width`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use super::super::{Ctx, Outcome};
use super::{link_runtime, xtask_in};
use xtask_onnx::tensor::Tensor;
use xtask_runtime::runtime::bootstrap::ensure_runtime;
use xtask_runtime::runtime::{Backend, Runtime};

#[derive(clap::Args)]
pub struct BenchBuild {
    /// Hidden width of the large MLP (2560 x hidden x 2 f32 weights; 4864 ≈ 100 MB).
    #[arg(long, default_value_t = 4864)]
    large_hidden: usize,
    /// Instead: the full-width model's contexts with --jobs 1 then --jobs 2 (opt-in, long:
    /// about 1.5 h on 2 cores; generates the ~2 GB model once).
    #[arg(long, conflicts_with = "real_size")]
    full_width: bool,
    /// Instead: the real-size model (opt-in, hours; generates ~19 GB once): vision compile
    /// scaling at 1, 2, 3 and 10 layers, the recipe remedies on 1 layer, then every component's build
    /// and HTP parity of llm_split0 and the action components (README "At the bundle's real size").
    #[arg(long)]
    real_size: bool,
    /// With --real-size: the vision layer counts of the scaling study (empty: skip it); 10
    /// is the card's vision.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,3,10",
        requires = "real_size"
    )]
    vision_layers: Vec<u32>,
    /// With --real-size: the layer counts of the vision split probe (one context per ViT
    /// layer, and the cut at the junction; empty: skip it).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,3",
        requires = "real_size"
    )]
    vision_split: Vec<u32>,
    /// With --real-size: skip the remedies on the 1-layer vision graph.
    #[arg(long, requires = "real_size")]
    no_remedies: bool,
    /// With --real-size: skip the whole model's build and the action_context size probe (only
    /// the vision study).
    #[arg(long, requires = "real_size")]
    vision_only: bool,
    /// With --real-size: only the action_context size probe (a few minutes).
    #[arg(long, requires = "real_size", conflicts_with = "vision_only")]
    context_probes_only: bool,
    /// With --real-size: --jobs of the whole model's build.
    #[arg(long, default_value_t = 1, requires = "real_size")]
    jobs: usize,
}

impl BenchBuild {
    pub fn run(self, ctx: &Ctx) -> Result<Outcome> {
        if self.real_size {
            let only_probes = self.context_probes_only;
            let phases = super::build_real_size::Phases {
                vision_layers: if only_probes {
                    vec![]
                } else {
                    self.vision_layers
                },
                vision_split: if only_probes {
                    vec![]
                } else {
                    self.vision_split
                },
                remedies: !self.no_remedies && !only_probes,
                model: !self.vision_only && !only_probes,
                context_probes: !self.vision_only,
                jobs: self.jobs,
            };
            super::build_real_size::run(&ctx.root, &phases)?;
            return Ok(Outcome::Success);
        }
        if self.full_width {
            super::build_full_width::run(&ctx.root)?;
            return Ok(Outcome::Success);
        }
        let libs = ensure_runtime(&ctx.root)?;
        let bench_dir = xtask_base::project::scratch_dir(&ctx.root, "bench/build");
        if bench_dir.exists() {
            std::fs::remove_dir_all(&bench_dir)?;
        }
        let tiny = super::tiny_project(&ctx.root, "build/tiny")?;
        let rt = Runtime::load(libs)?;
        let large = setup_large(&ctx.root, &bench_dir.join("large"), &rt, self.large_hidden)?;
        let weights_mb =
            std::fs::metadata(large.join("onnx/large/mlp.onnx.data"))?.len() as f64 / 1e6;
        xtask_base::outln!(
            "{:<28} {:>11} {:>11} {:>9} {:>22} {:>9}",
            "model",
            "cold build",
            "no-op",
            "no-op/cold",
            "no-op, memo cleared",
            "/cold"
        );
        for (label, root, model) in [
            ("tiny (7 components)".to_string(), &tiny, "tiny"),
            (
                format!("large (mlp, {weights_mb:.0} MB ONNX)"),
                &large,
                "large",
            ),
        ] {
            let cold = time_build(root, model)?;
            let noop = time_build(root, model)?;
            std::fs::remove_file(xtask_base::hashing::HashMemo::path_in(root))?;
            let rehash = time_build(root, model)?;
            xtask_base::outln!(
                "{label:<28} {cold:>10.2}s {noop:>10.3}s {:>9.4} {rehash:>21.3}s {:>9.4}",
                noop / cold,
                rehash / cold
            );
        }
        xtask_base::outln!(
            "(no-op = a second build-ctx with nothing changed; memo cleared = the same with the path/size/mtime hash memo deleted, so every input is re-hashed)"
        );
        Ok(Outcome::Success)
    }
}

/// Runs `build-ctx` in a scratch project as a separate process and returns its wall time.
fn time_build(root: &Path, model: &str) -> Result<f64> {
    let started = Instant::now();
    xtask_in(root, &["build-ctx", "--model", model, "--soc", "77"])?;
    Ok(started.elapsed().as_secs_f64())
}

/// The large project: the MLP, its recipe, and golden tensors computed by ORT's CPU EP (the
/// benchmark measures build time; the tiny model is where golden tensors are independent).
fn setup_large(repo: &Path, project: &Path, rt: &Runtime, hidden: usize) -> Result<PathBuf> {
    const SEQ: usize = 130;
    const WIDTH: usize = 2560;
    let onnx = project.join("onnx/large/mlp.onnx");
    std::fs::create_dir_all(onnx.parent().context("onnx dir")?)?;
    xtask_onnx::onnx::writer::write_mlp(&onnx, SEQ, WIDTH, hidden, 42)?;
    let x = ndarray::ArrayD::from_shape_vec(
        vec![1, SEQ, WIDTH],
        xtask_onnx::onnx::writer::seeded_weights(SEQ * WIDTH, 7, 1.0),
    )?;
    let inputs = BTreeMap::from([("x".to_string(), Tensor::F32(x))]);
    let mut outputs = rt.open(&onnx, &Backend::OrtCpu)?.run(&inputs)?;
    let mut golden = inputs;
    golden.insert("y".into(), outputs.remove("y").context("no output y")?);
    xtask_onnx::tensor::write_npz(&project.join("golden/large/mlp_io.npz"), &golden)?;
    std::fs::create_dir_all(project.join("recipes/large"))?;
    std::fs::write(project.join("recipes/large/model.toml"), LARGE_MODEL_TOML)?;
    std::fs::write(project.join("recipes/large/mlp.toml"), LARGE_MLP_TOML)?;
    link_runtime(repo, project)?;
    Ok(project.to_path_buf())
}

const LARGE_MODEL_TOML: &str = r#"[model]
name = "large"
family = "graphs"
components = ["mlp"]
seq_len = 130

[target]
qairt = "2.47.0"
soc = 77
htp_arch = 73
"#;

const LARGE_MLP_TOML: &str = r#"[component]
name = "mlp"
onnx = "onnx/large/mlp.onnx"

[golden]
file = "golden/large/mlp_io.npz"

[[inputs]]
name = "x"
shape = [1, 130, 2560]
dtype = "f32"
golden_key = "x"

[[outputs]]
name = "y"
shape = [1, 130, 2560]
dtype = "f32"
golden_key = "y"

[convert]
float_bitwidth = 32
preserve_io_datatype = true

[context]
graph_name = "mlp"
optimization_level = 3
fp16 = true
"#;
