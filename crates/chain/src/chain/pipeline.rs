//! The host chain of the MolmoAct2 family, as the robot runs it: vision → scatter (image
//! embeddings added into the prompt scaffold) → LLM splits chained (K/V collected) →
//! action_context once → Euler steps with action_step → de-normalisation. Component roles,
//! timesteps and de-normalisation come from `model.toml [host]`; sizes from the recipes. The
//! chain calls components through a closure, so it is the same for every backend.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use ndarray::{ArrayD, Axis, IxDyn, concatenate, s};

use xtask_onnx::tensor::Tensor;
use xtask_recipe::recipe::{DimMode, HostSection};

pub use xtask_recipe::recipe::tensor_names as names;

pub use super::trace::{HostInputs, load_host_inputs};

/// One named tensor the chain produced, with what it is compared against.
pub struct Boundary {
    pub name: String,
    pub value: ArrayD<f32>,
}

pub struct ChainResult {
    /// Every boundary tensor in chain order (ending with the actions).
    pub boundaries: Vec<Boundary>,
    pub keys: ArrayD<f32>,
    pub values: ArrayD<f32>,
}

/// Calls one component by name with named inputs.
pub type CallFn<'a> =
    dyn FnMut(&str, &BTreeMap<String, Tensor>) -> Result<BTreeMap<String, Tensor>> + 'a;

pub fn run_chain(
    host: &HostSection,
    inputs: &HostInputs,
    call: &mut CallFn<'_>,
) -> Result<ChainResult> {
    run_chain_fed(host, inputs, None, call)
}

/// Golden boundary values by boundary name, fed forward in place of the chain's own.
pub type Feed = BTreeMap<String, ArrayD<f32>>;

/// The chain, optionally teacher-forced: with `feed`, every boundary is recorded as the
/// component produced it but the *golden* value (same name, same shape) is passed on, so each
/// component runs on its golden inputs and its recorded error is the error it introduces
/// itself. A boundary the feed lacks passes on the chain's own value.
pub fn run_chain_fed(
    host: &HostSection,
    inputs: &HostInputs,
    feed: Option<&Feed>,
    call: &mut CallFn<'_>,
) -> Result<ChainResult> {
    let mut kept = Kept {
        feed,
        boundaries: Vec::new(),
    };
    let hidden = vision_and_scatter(host, inputs, &mut kept, call)?;
    let (keys, values) = llm_splits(host, inputs, hidden, &mut kept, call)?;
    let ctx = action_context(host, keys, values, &mut kept, call)?;
    let trajectory = euler_steps(host, inputs, ctx.k_ctx, ctx.v_ctx, &mut kept, call)?;
    actions(host, inputs, trajectory, &mut kept)?;
    Ok(ChainResult {
        boundaries: kept.boundaries,
        keys: ctx.keys,
        values: ctx.values,
    })
}

/// The boundaries recorded so far, and the golden values to pass on instead (teacher forcing).
struct Kept<'f> {
    feed: Option<&'f Feed>,
    boundaries: Vec<Boundary>,
}

impl Kept<'_> {
    /// Records `value` as the boundary `name`; returns what the chain passes on: the golden
    /// value of that name when fed and of the same shape, else `value`.
    fn keep(&mut self, name: String, value: ArrayD<f32>) -> ArrayD<f32> {
        let fed = self
            .feed
            .and_then(|f| f.get(&name))
            .filter(|g| g.shape() == value.shape())
            .cloned();
        self.boundaries.push(Boundary {
            name,
            value: value.clone(),
        });
        fed.unwrap_or(value)
    }
}

/// Vision, then its embeddings added into the prompt scaffold: the first LLM split's hidden
/// states.
fn vision_and_scatter(
    host: &HostSection,
    inputs: &HostInputs,
    kept: &mut Kept<'_>,
    call: &mut CallFn<'_>,
) -> Result<ArrayD<f32>> {
    let t = &inputs.trace;
    let mut vision_out = call(
        &host.vision,
        &BTreeMap::from([(names::PIXEL_VALUES.into(), inputs.pixel_values.clone())]),
    )?;
    let image_embeds = kept.keep(
        format!("{}/{}", host.vision, names::IMAGE_EMBEDS),
        f32_out(&mut vision_out, &host.vision, names::IMAGE_EMBEDS)?,
    );
    Ok(kept.keep(
        format!("scatter/{}", names::HIDDEN_STATES),
        scatter_image_embeds(
            f32_in(t, "prompt_embeds")?,
            &image_embeds,
            i64_in(t, "image_token_positions")?,
        )?,
    ))
}

/// One tensor per LLM split, in split order (their K or V before concatenation).
type Layers = Vec<ArrayD<f32>>;

/// The LLM splits chained, each one's hidden states into the next; their K/V collected in
/// split order.
fn llm_splits(
    host: &HostSection,
    inputs: &HostInputs,
    hidden: ArrayD<f32>,
    kept: &mut Kept<'_>,
    call: &mut CallFn<'_>,
) -> Result<(Layers, Layers)> {
    // One input map for every split, built once: the attention bias is not copied again per
    // call; what a call produced moves into the next call's map.
    let mut split_in = BTreeMap::from([
        (names::HIDDEN_STATES.to_string(), Tensor::F32(hidden)),
        (
            names::ATTENTION_BIAS.to_string(),
            Tensor::F32(f32_in(&inputs.trace, "attention_bias")?.clone()),
        ),
    ]);
    let (mut keys, mut values) = (Vec::new(), Vec::new());
    for split in &host.llm_splits {
        let mut out = call(split, &split_in)?;
        let hidden = kept.keep(
            format!("{split}/{}", names::HIDDEN_OUT),
            f32_out(&mut out, split, names::HIDDEN_OUT)?,
        );
        split_in.insert(names::HIDDEN_STATES.into(), Tensor::F32(hidden));
        for (name, into) in [(names::KEYS, &mut keys), (names::VALUES, &mut values)] {
            into.push(kept.keep(format!("{split}/{name}"), f32_out(&mut out, split, name)?));
        }
    }
    Ok((keys, values))
}

/// What `action_context` gives the Euler steps, and the concatenated K/V it was given (the
/// chain reports them too).
struct ActionContext {
    k_ctx: ArrayD<f32>,
    v_ctx: ArrayD<f32>,
    keys: ArrayD<f32>,
    values: ArrayD<f32>,
}

/// `action_context` once, on every split's K/V concatenated on the layer axis.
fn action_context(
    host: &HostSection,
    keys: Layers,
    values: Layers,
    kept: &mut Kept<'_>,
    call: &mut CallFn<'_>,
) -> Result<ActionContext> {
    let comp = &host.action_context;
    let mut ctx_in = BTreeMap::from([
        (names::KEYS.to_string(), Tensor::F32(concat_layers(&keys)?)),
        (
            names::VALUES.to_string(),
            Tensor::F32(concat_layers(&values)?),
        ),
    ]);
    let mut ctx_out = call(comp, &ctx_in)?;
    let k_ctx = kept.keep(
        format!("{comp}/{}", names::K_CTX),
        f32_out(&mut ctx_out, comp, names::K_CTX)?,
    );
    let v_ctx = kept.keep(
        format!("{comp}/{}", names::V_CTX),
        f32_out(&mut ctx_out, comp, names::V_CTX)?,
    );
    // The concatenated K/V moved into the context call's inputs: taken back, not copied.
    Ok(ActionContext {
        k_ctx,
        v_ctx,
        keys: f32_out(&mut ctx_in, comp, names::KEYS)?,
        values: f32_out(&mut ctx_in, comp, names::VALUES)?,
    })
}

/// The Euler loop from the initial noise: `action_step` once per timestep, the padded action
/// dims zeroed after every step. Returns the last trajectory.
fn euler_steps(
    host: &HostSection,
    inputs: &HostInputs,
    k_ctx: ArrayD<f32>,
    v_ctx: ArrayD<f32>,
    kept: &mut Kept<'_>,
    call: &mut CallFn<'_>,
) -> Result<ArrayD<f32>> {
    let t = &inputs.trace;
    let pad = f32_in(t, "action_dim_is_pad")?;
    let mut x = f32_in(t, "initial_noise")?.clone();
    zero_padded_dims(&mut x, pad)?;
    // Built once: the context and the masks stay the same between steps.
    let mut step_in = BTreeMap::from([
        (names::K_CTX.to_string(), Tensor::F32(k_ctx)),
        (names::V_CTX.to_string(), Tensor::F32(v_ctx)),
        (
            names::ENCODER_MASK.to_string(),
            Tensor::F32(f32_in(t, "encoder_attention_mask")?.clone()),
        ),
        (
            names::ACTION_DIM_IS_PAD.to_string(),
            Tensor::F32(pad.clone()),
        ),
    ]);
    for (i, &step_t) in host.timesteps.iter().enumerate() {
        step_in.insert(names::TRAJECTORY.into(), Tensor::F32(x));
        step_in.insert(
            names::TIMESTEP.into(),
            Tensor::F32(ArrayD::from_elem(IxDyn(&[1]), step_t)),
        );
        x = f32_out(
            &mut call(&host.action_step, &step_in)?,
            &host.action_step,
            names::NEXT_TRAJECTORY,
        )?;
        zero_padded_dims(&mut x, pad)?;
        x = kept.keep(format!("euler step {i} (t={step_t})/trajectory"), x);
    }
    Ok(x)
}

/// The used action dims of the last trajectory (the normalized actions), then de-normalised:
/// the chain's last two boundaries.
fn actions(
    host: &HostSection,
    inputs: &HostInputs,
    x: ArrayD<f32>,
    kept: &mut Kept<'_>,
) -> Result<()> {
    let t = &inputs.trace;
    let width = x.shape().get(2).copied().unwrap_or(0);
    if x.ndim() != 3 || width < host.action_dim_used {
        bail!(
            "`{}` returned a trajectory of shape {:?}: no first {} action dims ([host] action_dim_used) to take",
            host.action_step,
            x.shape(),
            host.action_dim_used
        );
    }
    let used = kept.keep(
        "normalized actions (before clipping)".into(),
        x.slice(s![.., .., ..host.action_dim_used])
            .to_owned()
            .into_dyn(),
    );
    let actions = denormalize(&used, f32_in(t, "q01")?, f32_in(t, "q99")?, &inputs.denorm)?;
    kept.keep("actions".into(), actions);
    Ok(())
}

/// `hidden[0, pos[j]] += image_embeds[j]`: image features are added at the image-token slots.
pub fn scatter_image_embeds(
    prompt: &ArrayD<f32>,
    image_embeds: &ArrayD<f32>,
    positions: &ArrayD<i64>,
) -> Result<ArrayD<f32>> {
    let mut hidden = prompt.clone();
    let (seq, width) = (hidden.shape()[1], hidden.shape()[2]);
    if image_embeds.shape() != [positions.len(), width] {
        bail!(
            "scatter: image_embeds {:?} do not fit {} image positions of width {width}",
            image_embeds.shape(),
            positions.len()
        );
    }
    for (j, &pos) in positions.iter().enumerate() {
        let pos = usize::try_from(pos)
            .ok()
            .filter(|p| *p < seq)
            .with_context(|| format!("image token position {pos} outside the sequence of {seq}"))?;
        let mut row = hidden.slice_mut(s![0, pos, ..]);
        row += &image_embeds.slice(s![j, ..]);
    }
    Ok(hidden)
}

fn concat_layers(parts: &[ArrayD<f32>]) -> Result<ArrayD<f32>> {
    let views: Vec<_> = parts.iter().map(|a| a.view()).collect();
    concatenate(Axis(0), &views).context("the splits' K/V do not concatenate on the layer axis")
}

fn zero_padded_dims(x: &mut ArrayD<f32>, pad: &ArrayD<f32>) -> Result<()> {
    let dims = *x.shape().last().context("trajectory has no dims")?;
    if pad.len() != dims {
        bail!(
            "action_dim_is_pad has {} entries, the trajectory {dims} dims",
            pad.len()
        );
    }
    let keep: Vec<f32> = pad.iter().map(|p| 1.0 - p).collect();
    let last = Axis(x.ndim() - 1);
    for mut lane in x.lanes_mut(last) {
        lane.iter_mut().zip(&keep).for_each(|(v, k)| *v *= k);
    }
    Ok(())
}

/// q01/q99 de-normalisation, per dim as `modes` say: clip to [-1, 1] (`clips`), then
/// `(a + 1)(q99 - q01)/2 + q01` (`denormalizes`); a dim doing neither passes unchanged.
pub fn denormalize(
    a: &ArrayD<f32>,
    q01: &ArrayD<f32>,
    q99: &ArrayD<f32>,
    modes: &[DimMode],
) -> Result<ArrayD<f32>> {
    let dims = *a.shape().last().context("actions have no dims")?;
    if modes.len() != dims {
        bail!(
            "de-normalisation is given for {} dims, the actions have {dims}",
            modes.len()
        );
    }
    if q01.len() < dims || q99.len() < dims {
        bail!(
            "q01/q99 have {}/{} entries for {dims} action dims",
            q01.len(),
            q99.len()
        );
    }
    let (lo, hi): (Vec<f32>, Vec<f32>) =
        (q01.iter().copied().collect(), q99.iter().copied().collect());
    let mut out = a.clone();
    for mut lane in out.lanes_mut(Axis(a.ndim() - 1)) {
        for (d, v) in lane.iter_mut().enumerate() {
            if modes[d].clips() {
                *v = v.clamp(-1.0, 1.0);
            }
            if modes[d].denormalizes() {
                *v = (*v + 1.0) * (hi[d] - lo[d]) / 2.0 + lo[d];
            }
        }
    }
    Ok(out)
}

fn f32_in<'t>(trace: &'t BTreeMap<String, Tensor>, key: &str) -> Result<&'t ArrayD<f32>> {
    match trace.get(key) {
        Some(Tensor::F32(a)) => Ok(a),
        Some(other) => bail!("host tensor `{key}` is {}, expected f32", other.dtype()),
        None => bail!("the golden has no host tensor `{key}`"),
    }
}

fn i64_in<'t>(trace: &'t BTreeMap<String, Tensor>, key: &str) -> Result<&'t ArrayD<i64>> {
    match trace.get(key) {
        Some(Tensor::I64(a)) => Ok(a),
        Some(other) => bail!("host tensor `{key}` is {}, expected i64", other.dtype()),
        None => bail!("the golden has no host tensor `{key}`"),
    }
}

/// Takes the output out of the map: boundary tensors are megabytes at full width and the map
/// is dropped right after, so a copy would be pure host overhead.
fn f32_out(out: &mut BTreeMap<String, Tensor>, comp: &str, name: &str) -> Result<ArrayD<f32>> {
    match out.remove(name) {
        Some(Tensor::F32(a)) => Ok(a),
        Some(Tensor::F16(a)) => Ok(a.mapv(f32::from)),
        Some(other) => bail!("{comp}: output `{name}` is {}, expected f32", other.dtype()),
        None => bail!("{comp}: produced no output `{name}`"),
    }
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;
