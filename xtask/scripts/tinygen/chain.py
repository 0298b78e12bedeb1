"""One full host-chain run on the numpy reference, as `cargo xtask run` does it: vision ->
scatter into the prompt -> LLM splits -> action_context -> one action_step per timestep ->
clip / de-normalise. It yields each component's golden I/O and the trace tensors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import reference as ref
from .dims import ADIM, ADIM_USED, F32, GRIPPER_DIM, HORIZON, IMAGE_TOKEN_POSITIONS, S, VALID_LEN
from .inputs import make_attention_bias, make_images, patchify
from .weights import Weights, rng_for


@dataclass
class ChainRun:
    golden: dict  # component -> {tensor name: array}, inputs then outputs in graph order
    trace: dict  # our trace name -> array (steps as trajectory_step{i}_out)
    steps: list  # the trace names of the per-step outputs, in step order


def run_chain(d, w: Weights) -> ChainRun:
    r = rng_for("chain")
    pixel_values = np.stack([patchify(im) for im in make_images()])[None].astype(F32)  # [1,2,729,588]
    prompt_embeds = (r.standard_normal((1, S, d.H)) * 0.5).astype(F32)
    attention_bias = make_attention_bias()
    encoder_attention_mask = (np.arange(S) < VALID_LEN).astype(F32).reshape(1, S)
    action_dim_is_pad = (np.arange(ADIM) >= ADIM_USED).astype(F32).reshape(1, ADIM)
    initial_noise = r.standard_normal((1, HORIZON, ADIM)).astype(F32)
    q01 = np.array(r.uniform(-0.8, -0.05, ADIM_USED), dtype=F32)
    q99 = (q01 + r.uniform(0.1, 1.2, ADIM_USED)).astype(F32)
    if d.DENORM is None:
        q01[GRIPPER_DIM], q99[GRIPPER_DIM] = 0.0, 1.0  # unused: gripper passes through
    # else every dim keeps distinct quantiles, so de-normalising a dim the recipe says not
    # to (or the reverse) changes the actions

    golden = {}
    image_embeds = ref.vision(d, w.vision, pixel_values).astype(F32)
    golden["vision"] = {"pixel_values": pixel_values, "image_embeds": image_embeds}

    hidden = prompt_embeds.copy()
    hidden[0, IMAGE_TOKEN_POSITIONS] += image_embeds  # f32 add, as the host does
    hidden_states = hidden.copy()
    keys_all, values_all, split_outs = [], [], []
    for i in range(d.NSPLITS):
        ho, k, v = ref.llm_split(d, w.llm[i], hidden, attention_bias)
        ho, k, v = ho.astype(F32), k.astype(F32), v.astype(F32)
        golden[f"llm_split{i}"] = {
            "hidden_states": hidden, "attention_bias": attention_bias,
            "hidden_out": ho, "keys": k, "values": v,
        }
        keys_all.append(k)
        values_all.append(v)
        split_outs.append(ho)
        hidden = ho
    keys = np.concatenate(keys_all, axis=0)
    values = np.concatenate(values_all, axis=0)
    k_ctx, v_ctx = (a.astype(F32) for a in ref.action_context(w.action_context, keys, values))
    golden["action_context"] = {"keys": keys, "values": values, "k_ctx": k_ctx, "v_ctx": v_ctx}

    x = (initial_noise * (1.0 - action_dim_is_pad)).astype(F32)
    traj_in, traj_out = [], []
    for t in d.TIMESTEPS:
        ts = np.array([t], dtype=F32)
        y = ref.action_step(d, w.action_step, x, ts, k_ctx, v_ctx, encoder_attention_mask, action_dim_is_pad)
        y = y.astype(F32)
        traj_in.append(x)
        traj_out.append(y)
        if not golden.get("action_step"):
            golden["action_step"] = {
                "trajectory": x, "timestep": ts, "k_ctx": k_ctx, "v_ctx": v_ctx,
                "encoder_attention_mask": encoder_attention_mask,
                "action_dim_is_pad": action_dim_is_pad, "next_trajectory": y,
            }
        x = y

    actions = denormalise(d, x, q01, q99)
    steps = {f"trajectory_step{i}_out": y for i, y in enumerate(traj_out)}
    trace = {
        "prompt_embeds": prompt_embeds,
        "image_token_positions": IMAGE_TOKEN_POSITIONS,
        "attention_bias": attention_bias,
        "encoder_attention_mask": encoder_attention_mask,
        "action_dim_is_pad": action_dim_is_pad,
        "initial_noise": initial_noise,
        "q01": q01,
        "q99": q99,
        "image_embeds": image_embeds,
        "hidden_states": hidden_states,
        "llm_hidden_out": split_outs[-1],
        "keys": keys,
        "values": values,
        "k_ctx": k_ctx,
        "v_ctx": v_ctx,
        "trajectory_step0_in": traj_in[0],
        **steps,
        "actions": actions,
    }
    return ChainRun(golden, trace, list(steps))


def denormalise(d, x, q01, q99):
    """The used action dims of the final trajectory, clipped and/or de-normalised per dim."""
    a = ref.f64(x[:, :, :ADIM_USED]).copy()
    for k, mode in enumerate(d.denorm_modes()):
        assert mode in ("clip+denorm", "clip", "denorm", "pass"), mode
        if mode in ("clip+denorm", "clip"):
            a[..., k] = np.clip(a[..., k], -1.0, 1.0)
        if mode in ("clip+denorm", "denorm"):
            a[..., k] = (a[..., k] + 1.0) * (ref.f64(q99[k]) - ref.f64(q01[k])) / 2.0 + ref.f64(q01[k])
        if d.DENORM is not None and mode != "clip+denorm":
            # the data must show whether this dim is clipped: some value outside [-1, 1]
            assert np.abs(x[..., k]).max() > 1.0, (k, mode, np.abs(x[..., k]).max())
    return a.astype(F32)
