"""The trace tensors `cargo xtask run` reads, by our name: the names a recipe's
[host.trace_keys] may map to a trace file's names.

The Rust side owns this list (`xtask/src/recipe/host.rs`: HOST_INPUT_KEYS, REFERENCE_KEYS,
STEP_OUT); this is its mirror for the recipes the generator writes, and the Rust unit test
`recipe::host::tests::the_generator_mirrors_the_host_trace_keys` fails when the two differ.
Keep each tuple one string per line, in the Rust order.
"""

HOST_INPUT_KEYS = (
    "prompt_embeds",
    "image_token_positions",
    "attention_bias",
    "encoder_attention_mask",
    "action_dim_is_pad",
    "initial_noise",
    "q01",
    "q99",
)

REFERENCE_KEYS = (
    "hidden_states",
    "keys",
    "values",
    "actions",
)

STEP_OUT = "trajectory_step{i}_out"

HOST_READ_KEYS = HOST_INPUT_KEYS + REFERENCE_KEYS + (STEP_OUT,)
