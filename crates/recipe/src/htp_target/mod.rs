//! The HTP target of a build: the SoC table and the options rendered from a recipe.
//!
//! `HtpTarget` is the one place that turns a recipe's `[context]` section and a SoC into what
//! a backend is told: the QNN EP provider options (embedded toolchain) and the HTP
//! backend-extension config file (QAIRT SDK toolchain). Both renderings live side by side so
//! they cannot drift apart; the tests check that they agree on every field.

pub use xtask_base::soc;

use serde::{Deserialize, Serialize};

use crate::recipe::ContextSection;
use soc::Soc;

pub mod sdk_config;
pub use sdk_config::{DeviceConfig, GraphConfig, HtpBackendConfig};

/// The graph options of a context build (a component's `[context]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HtpGraph {
    pub name: String,
    pub optimization_level: u8,
    pub fp16: bool,
    /// 0 = the backend's default (omitted from both renderings).
    pub vtcm_mb: u32,
    /// A quantized (QDQ) graph: its graph-input Quantize and graph-output Dequantize nodes
    /// are compiled into the binary too (`offload_graph_io_quantization=0`), so the binary
    /// takes and gives float tensors like a float one. Absent in records of float builds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quantized: bool,
}

/// The HTP a session or context binary targets: the device, and the graph options when a
/// graph is compiled (none when an already built context binary is loaded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HtpTarget {
    pub soc_model: u32,
    pub htp_arch: u32,
    pub graph: Option<HtpGraph>,
}

impl HtpTarget {
    /// The target of compiling a component: its `[context]` options on `soc`.
    pub fn from_recipe(soc: &Soc, ctx: &ContextSection) -> Self {
        HtpTarget {
            soc_model: soc.id,
            htp_arch: soc.htp_arch,
            graph: Some(HtpGraph {
                name: ctx.graph_name.clone(),
                optimization_level: ctx.optimization_level,
                fp16: ctx.fp16,
                vtcm_mb: ctx.vtcm_mb,
                quantized: false,
            }),
        }
    }

    /// The target of compiling `comp` on `soc`: its `[context]` options, and whether its
    /// graph is quantized (`[quantize]`).
    pub fn for_component(soc: &Soc, comp: &crate::recipe::Component) -> Self {
        let mut t = Self::from_recipe(soc, &comp.file.context);
        if let Some(g) = &mut t.graph {
            g.quantized = comp.precision().is_quantized();
        }
        t
    }

    /// The target of `doctor`'s HTP probe: its one-node ReLU graph compiled for SoC 77 (v73)
    /// with the options every shipped recipe uses (O3, fp16, default VTCM).
    pub fn probe() -> Self {
        HtpTarget {
            soc_model: 77,
            htp_arch: 73,
            graph: Some(HtpGraph {
                name: "probe".into(),
                optimization_level: 3,
                fp16: true,
                vtcm_mb: 0,
                quantized: false,
            }),
        }
    }

    /// The target of loading built context binaries (EPContext wrappers): their graphs were
    /// compiled with each component's `[context]` options, which QNN reads from the binary,
    /// so only the device is named.
    pub fn for_built_contexts(soc_model: u32, htp_arch: u32) -> Self {
        HtpTarget {
            soc_model,
            htp_arch,
            graph: None,
        }
    }

    /// The QNN EP provider options for the HTP, without the EP prefix and without
    /// `backend_path` (the runtime adds where its libraries are).
    pub fn ep_options(&self) -> Vec<(String, String)> {
        let mut opts = vec![
            ("soc_model".to_string(), self.soc_model.to_string()),
            ("htp_arch".to_string(), self.htp_arch.to_string()),
        ];
        if let Some(g) = &self.graph {
            opts.push((
                "htp_graph_finalization_optimization_mode".into(),
                g.optimization_level.to_string(),
            ));
            opts.push((
                "enable_htp_fp16_precision".into(),
                u8::from(g.fp16).to_string(),
            ));
            if g.vtcm_mb > 0 {
                opts.push(("vtcm_mb".into(), g.vtcm_mb.to_string()));
            }
            if g.quantized {
                opts.push(("offload_graph_io_quantization".into(), "0".into()));
            }
        }
        opts
    }

    /// The HTP backend-extension config of the QAIRT SDK tools (`graphs`, `devices`).
    pub fn sdk_config(&self) -> HtpBackendConfig {
        HtpBackendConfig {
            devices: vec![DeviceConfig {
                dsp_arch: format!("v{}", self.htp_arch),
                soc_model: self.soc_model,
            }],
            graphs: self.graph.as_ref().map(|g| {
                vec![GraphConfig {
                    optimization_level: g.optimization_level,
                    fp16_relaxed_precision: u8::from(g.fp16),
                    graph_names: vec![g.name.clone()],
                    vtcm_mb: (g.vtcm_mb > 0).then_some(g.vtcm_mb),
                }]
            }),
        }
    }

    /// The target an HTP backend-extension config describes (the inverse of `sdk_config`).
    pub fn from_sdk_config(config: &HtpBackendConfig) -> anyhow::Result<Self> {
        use anyhow::Context;
        let device = config
            .devices
            .first()
            .context("the config names no device")?;
        let htp_arch = device
            .dsp_arch
            .strip_prefix('v')
            .and_then(|d| d.parse().ok())
            .with_context(|| format!("devices[0].dsp_arch {:?} is not `v<N>`", device.dsp_arch))?;
        let graph = match config.graphs.as_ref().and_then(|g| g.first()) {
            None => None,
            Some(g) => Some(HtpGraph {
                name: g
                    .graph_names
                    .first()
                    .context("graphs[0].graph_names is empty")?
                    .clone(),
                optimization_level: g.optimization_level,
                fp16: g.fp16_relaxed_precision == 1,
                vtcm_mb: g.vtcm_mb.unwrap_or(0),
                quantized: false,
            }),
        };
        Ok(HtpTarget {
            soc_model: device.soc_model,
            htp_arch,
            graph,
        })
    }
}

/// The SoC of `--soc` (an id or chip name), or the model's own target when absent.
pub fn target_soc(model: &crate::recipe::Model, soc: Option<&str>) -> anyhow::Result<Soc> {
    soc::parse_soc(soc.unwrap_or(&model.file.target.soc.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(vtcm_mb: u32, fp16: bool) -> HtpTarget {
        let soc = soc::parse_soc("77").unwrap();
        HtpTarget::from_recipe(
            &soc,
            &ContextSection {
                graph_name: "vision".into(),
                optimization_level: 3,
                fp16,
                vtcm_mb,
                weight_sharing_group: None,
            },
        )
    }

    /// Each EP option and the SDK config field that says the same thing.
    fn agree(t: &HtpTarget) {
        let ep: std::collections::BTreeMap<String, String> = t.ep_options().into_iter().collect();
        let sdk = t.sdk_config();
        let device = &sdk.devices[0];
        assert_eq!(ep["soc_model"], device.soc_model.to_string());
        assert_eq!(format!("v{}", ep["htp_arch"]), device.dsp_arch);
        let graph = &sdk.graphs.as_ref().unwrap()[0];
        assert_eq!(
            ep["htp_graph_finalization_optimization_mode"],
            graph.optimization_level.to_string()
        );
        assert_eq!(
            ep["enable_htp_fp16_precision"],
            graph.fp16_relaxed_precision.to_string()
        );
        assert_eq!(
            ep.get("vtcm_mb").cloned(),
            graph.vtcm_mb.map(|v| v.to_string())
        );
        assert_eq!(ep.len(), 4 + usize::from(ep.contains_key("vtcm_mb")));
        assert_eq!(HtpTarget::from_sdk_config(&sdk).unwrap(), *t);
    }

    #[test]
    fn ep_options_and_sdk_config_agree_on_every_field() {
        for t in [target(0, true), target(8, true), target(0, false)] {
            agree(&t);
        }
    }

    #[test]
    fn vtcm_zero_means_backend_default_on_both_sides() {
        let t = target(0, true);
        assert!(t.ep_options().iter().all(|(k, _)| k != "vtcm_mb"));
        assert!(t.sdk_config().graphs.unwrap()[0].vtcm_mb.is_none());
        let json = serde_json::to_value(target(0, true).sdk_config()).unwrap();
        assert!(json["graphs"][0].get("vtcm_mb").is_none(), "{json}");
    }

    #[test]
    fn a_built_context_target_names_only_the_device() {
        let t = HtpTarget::for_built_contexts(77, 73);
        assert_eq!(t.ep_options().len(), 2);
        assert!(t.sdk_config().graphs.is_none());
        assert_eq!(HtpTarget::from_sdk_config(&t.sdk_config()).unwrap(), t);
    }
}
