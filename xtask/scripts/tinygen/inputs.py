"""The host inputs of one chain run: two synthetic camera images (smooth gradients, soft
blobs, sensor noise), their patches, and the LLM's attention bias."""

from __future__ import annotations

import numpy as np

from .dims import ATTN_MASK_VALUE, CAMS, F32, GRID, IMAGE_TOKEN_POSITIONS, IMG, NPATCH, PATCH, PDIM, S, VALID_LEN
from .weights import rng_for


def make_images():
    r = rng_for("images")
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float64) / (IMG - 1)
    imgs = []
    for cam in range(CAMS):
        img = np.zeros((IMG, IMG, 3))
        for c in range(3):
            a, b, ph = r.uniform(-1, 1), r.uniform(-1, 1), r.uniform(0, 2 * np.pi)
            img[..., c] = 0.5 + 0.25 * (a * xx + b * yy) + 0.1 * np.sin(2 * np.pi * (xx + yy) * (1 + cam) + ph)
        for _ in range(5):  # soft blobs
            cx, cy = r.uniform(0.1, 0.9, 2)
            rad = r.uniform(0.05, 0.2)
            col = r.uniform(-0.4, 0.4, 3)
            blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * rad**2))
            img += blob[..., None] * col
        img = img * 255.0 + r.normal(0.0, 1.0, img.shape)
        imgs.append(np.clip(np.rint(img), 0, 255).astype(np.uint8))
    return imgs


def patchify(img_u8):
    """Patch index p = row*27+col; within a patch (dy, dx, c); value = u8/255*2-1."""
    p = img_u8.reshape(GRID, PATCH, GRID, PATCH, 3).transpose(0, 2, 1, 3, 4).reshape(NPATCH, PDIM)
    return p.astype(np.float64) / 255.0 * 2.0 - 1.0


def make_attention_bias():
    """Causal, image tokens attend to each other, padding blocked; blocked = -65504."""
    is_img = np.zeros(S, dtype=bool)
    is_img[IMAGE_TOKEN_POSITIONS] = True
    valid = np.arange(S) < VALID_LEN
    i = np.arange(S)[:, None]
    j = np.arange(S)[None, :]
    allowed = ((j <= i) | (is_img[:, None] & is_img[None, :])) & valid[None, :]
    return np.where(allowed, 0.0, ATTN_MASK_VALUE).astype(F32).reshape(1, 1, S, S)
