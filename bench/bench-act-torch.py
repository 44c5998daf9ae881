#!/usr/bin/env python3
"""bench/bench-act-torch.py: ACT's training step in PyTorch on the CPU, the yardstick of
`robotrain policy bench`.

This is a small model of its own with the architecture of LeRobot's ACT (written from
../shared/spec/lerobot.md section 1, not LeRobot's code): a torchvision ResNet-18 trunk with
frozen batch norms and no pretrained weights, a 1x1 convolution to dim_model, 2-D sinusoidal
position embeddings of the feature map, a post-norm transformer encoder and decoder (ReLU,
dropout), the VAE encoder with its cls token, the L1 + KL loss, AdamW with LeRobot's two
parameter groups (backbone, the rest) and gradient clipping to norm 10.

It times full training steps (forward, loss.item(), backward, clipping, AdamW step, zero_grad)
on random inputs after warm-up steps, on --threads threads, and prints the same lines as
`robotrain policy bench`:

    policy: act-torch, 51613582 parameters (51.6M)
    s/step: median 1.2345, min 1.2000, max 1.3000
    samples/s: 6.48 (batch / median)

The parameter count is PyTorch's sum over model.parameters(); equal to robotrain's for the
same options, it shows the two build the same architecture.
"""
import argparse
import math
import statistics
import sys
import time

import torch
from torch import nn
import torchvision
from torchvision.ops.misc import FrozenBatchNorm2d


def sinusoid_1d(positions, dim):
    """The VAE encoder's table [positions, dim]: angle p / 10000^(2 floor(j/2) / dim), sin on
    even channels, cos on odd ones (computed in float64, kept in float32)."""
    p = torch.arange(positions, dtype=torch.float64)[:, None]
    j = torch.arange(dim, dtype=torch.float64)[None, :]
    angle = p / torch.pow(10000.0, 2 * torch.div(j, 2, rounding_mode="floor") / dim)
    table = torch.where(j.long() % 2 == 0, torch.sin(angle), torch.cos(angle))
    return table.float()


def sinusoid_2d(h, w, dim):
    """The image tokens' embedding [1, dim, h, w]: dim/2 channels for the row, dim/2 for the
    column, interleaved sin/cos of (i + 1) / (size + 1e-6) * 2 pi at 10000^(2 floor(k/2) / (dim/2))."""
    half = dim // 2
    y = (torch.arange(h, dtype=torch.float32) + 1) / (h + 1e-6) * 2 * math.pi
    x = (torch.arange(w, dtype=torch.float32) + 1) / (w + 1e-6) * 2 * math.pi
    k = torch.arange(half, dtype=torch.float32)
    freq = 10000.0 ** (2 * torch.div(k, 2, rounding_mode="floor") / half)
    ry = y[:, None] / freq  # [h, half]
    rx = x[:, None] / freq  # [w, half]
    even = (torch.arange(half) % 2 == 0)
    ey = torch.where(even, torch.sin(ry), torch.cos(ry))  # [h, half]
    ex = torch.where(even, torch.sin(rx), torch.cos(rx))  # [w, half]
    ey = ey.t()[:, :, None].expand(half, h, w)
    ex = ex.t()[:, None, :].expand(half, h, w)
    return torch.cat([ey, ex], 0)[None]


class EncoderLayer(nn.Module):
    """Post-norm: x = norm1(x + drop(SA(x+pos, x+pos, x))); x = norm2(x + drop(FFN(x)))."""

    def __init__(self, d, heads, ff, p):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=p)
        self.linear1 = nn.Linear(d, ff)
        self.dropout = nn.Dropout(p)
        self.linear2 = nn.Linear(ff, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.dropout1 = nn.Dropout(p)
        self.dropout2 = nn.Dropout(p)

    def forward(self, x, pos, key_padding_mask=None):
        qk = x + pos
        a = self.self_attn(qk, qk, x, key_padding_mask=key_padding_mask, need_weights=False)[0]
        x = self.norm1(x + self.dropout1(a))
        f = self.linear2(self.dropout(torch.relu(self.linear1(x))))
        return self.norm2(x + self.dropout2(f))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ff, p):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=p)
        self.multihead_attn = nn.MultiheadAttention(d, heads, dropout=p)
        self.linear1 = nn.Linear(d, ff)
        self.dropout = nn.Dropout(p)
        self.linear2 = nn.Linear(ff, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.norm3 = nn.LayerNorm(d)
        self.dropout1 = nn.Dropout(p)
        self.dropout2 = nn.Dropout(p)
        self.dropout3 = nn.Dropout(p)

    def forward(self, x, qpos, memory, mpos):
        qk = x + qpos
        x = self.norm1(x + self.dropout1(self.self_attn(qk, qk, x, need_weights=False)[0]))
        c = self.multihead_attn(x + qpos, memory + mpos, memory, need_weights=False)[0]
        x = self.norm2(x + self.dropout2(c))
        f = self.linear2(self.dropout(torch.relu(self.linear1(x))))
        return self.norm3(x + self.dropout3(f))


class Stack(nn.Module):
    def __init__(self, layers, final_norm=None):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        if final_norm is not None:
            self.norm = final_norm


class ACTModel(nn.Module):
    def __init__(self, o):
        super().__init__()
        d, T = o.dim_model, o.chunk_size
        self.o = o
        self.use_vae = o.use_vae
        if o.use_vae:
            n_vae = 2 + T if o.state_dim else 1 + T
            self.register_buffer("vae_encoder_pos_enc", sinusoid_1d(n_vae, d)[None])
            self.vae_encoder = Stack([EncoderLayer(d, o.n_heads, o.dim_feedforward, o.dropout)
                                      for _ in range(o.n_vae_encoder_layers)])
            self.vae_encoder_cls_embed = nn.Embedding(1, d)
            if o.state_dim:
                self.vae_encoder_robot_state_input_proj = nn.Linear(o.state_dim, d)
            self.vae_encoder_action_input_proj = nn.Linear(o.action_dim, d)
            self.vae_encoder_latent_output_proj = nn.Linear(d, 2 * o.latent_dim)
        if o.cameras:
            trunk = torchvision.models.resnet18(weights=None, norm_layer=FrozenBatchNorm2d)
            # the trunk up to layer4 (torchvision's IntermediateLayerGetter keeps these names)
            self.backbone = nn.ModuleDict({k: getattr(trunk, k) for k in
                                           ("conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4")})
        self.encoder = Stack([EncoderLayer(d, o.n_heads, o.dim_feedforward, o.dropout)
                              for _ in range(o.n_encoder_layers)])
        self.decoder = Stack([DecoderLayer(d, o.n_heads, o.dim_feedforward, o.dropout)
                              for _ in range(o.n_decoder_layers)], nn.LayerNorm(d))
        if o.state_dim:
            self.encoder_robot_state_input_proj = nn.Linear(o.state_dim, d)
        self.encoder_latent_input_proj = nn.Linear(o.latent_dim, d)
        if o.cameras:
            self.encoder_img_feat_input_proj = nn.Conv2d(512, d, kernel_size=1)
        self.encoder_1d_feature_pos_embed = nn.Embedding(1 + (1 if o.state_dim else 0), d)
        self.decoder_pos_embed = nn.Embedding(T, d)
        self.action_head = nn.Linear(d, o.action_dim)
        # LeRobot re-initialises the transformer's matrices (not the VAE encoder's) Xavier-uniform
        for p in list(self.encoder.parameters()) + list(self.decoder.parameters()):
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def trunk(self, img):
        b = self.backbone
        x = b["maxpool"](b["relu"](b["bn1"](b["conv1"](img))))
        return b["layer4"](b["layer3"](b["layer2"](b["layer1"](x))))

    def forward(self, state, images, action, action_is_pad):
        o = self.o
        B = action.shape[0]
        if self.use_vae:
            tokens = [self.vae_encoder_cls_embed.weight[None].expand(B, 1, -1)]
            if o.state_dim:
                tokens.append(self.vae_encoder_robot_state_input_proj(state)[:, None])
            tokens.append(self.vae_encoder_action_input_proj(action))
            x = torch.cat(tokens, 1).transpose(0, 1)
            n_lead = len(tokens) - 1
            mask = torch.cat([torch.zeros(B, n_lead, dtype=torch.bool), action_is_pad], 1)
            pos = self.vae_encoder_pos_enc.transpose(0, 1)
            for layer in self.vae_encoder.layers:
                x = layer(x, pos, mask)
            p = self.vae_encoder_latent_output_proj(x[0])
            mu, log_sigma_x2 = p[:, :o.latent_dim], p[:, o.latent_dim:]
            latent = mu + torch.exp(log_sigma_x2 / 2) * torch.randn_like(mu)
        else:
            mu = log_sigma_x2 = None
            latent = torch.zeros(B, o.latent_dim)
        tokens = [self.encoder_latent_input_proj(latent)[None]]
        pos = [self.encoder_1d_feature_pos_embed.weight[:, None]]
        if o.state_dim:
            tokens.append(self.encoder_robot_state_input_proj(state)[None])
        for img in images:
            f = self.trunk(img)
            cam_pos = sinusoid_2d(f.shape[2], f.shape[3], o.dim_model).to(f.dtype)
            f = self.encoder_img_feat_input_proj(f)
            tokens.append(f.flatten(2).permute(2, 0, 1))  # (h w) b c
            pos.append(cam_pos.flatten(2).permute(2, 0, 1))
        x = torch.cat(tokens, 0)
        pos = torch.cat(pos, 0)
        for layer in self.encoder.layers:
            x = layer(x, pos)
        qpos = self.decoder_pos_embed.weight[:, None]
        y = torch.zeros(o.chunk_size, B, o.dim_model)
        for layer in self.decoder.layers:
            y = layer(y, qpos, x, pos)
        y = self.decoder.norm(y)
        return self.action_head(y.transpose(0, 1)), mu, log_sigma_x2


class ACTPolicy(nn.Module):
    def __init__(self, o):
        super().__init__()
        self.model = ACTModel(o)
        self.kl_weight = o.kl_weight

    def forward(self, state, images, action, action_is_pad):
        actions_hat, mu, log_sigma_x2 = self.model(state, images, action, action_is_pad)
        valid = (~action_is_pad).unsqueeze(-1)
        l1 = ((action - actions_hat).abs() * valid).sum() / max(1, int(valid.sum()) * action.shape[-1])
        if mu is None:
            return l1
        kld = (-0.5 * (1 + log_sigma_x2 - mu.pow(2) - log_sigma_x2.exp())).sum(-1).mean()
        return l1 + self.kl_weight * kld


def parse_args(argv):
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("--cameras", type=int, default=1)
    a.add_argument("--image_shape", default="3x96x96")
    a.add_argument("--state_dim", type=int, default=2)
    a.add_argument("--action_dim", type=int, default=2)
    a.add_argument("--batch_size", type=int, default=8)
    a.add_argument("--steps", type=int, default=10)
    a.add_argument("--warmup", type=int, default=2)
    a.add_argument("--threads", type=int, default=0, help="0: torch's default")
    a.add_argument("--seed", type=int, default=1000)
    a.add_argument("--count_only", action="store_true", help="print the parameter count and stop")
    # ACT's options, LeRobot's defaults (the --policy.* flags of robotrain; n_action_steps only
    # matters at inference and is accepted for the same command lines)
    for key, default in (("chunk_size", 100), ("n_action_steps", 100), ("dim_model", 512), ("n_heads", 8), ("dim_feedforward", 3200),
                         ("n_encoder_layers", 4), ("n_decoder_layers", 1), ("n_vae_encoder_layers", 4),
                         ("latent_dim", 32)):
        a.add_argument("--" + key, type=int, default=default)
    a.add_argument("--use_vae", default="true", choices=("true", "false"))
    a.add_argument("--dropout", type=float, default=0.1)
    a.add_argument("--kl_weight", type=float, default=10.0)
    a.add_argument("--optimizer_lr", type=float, default=1e-5)
    a.add_argument("--optimizer_lr_backbone", type=float, default=1e-5)
    a.add_argument("--optimizer_weight_decay", type=float, default=1e-4)
    o = a.parse_args(argv)
    o.use_vae = o.use_vae == "true"
    try:
        o.shape = tuple(int(v) for v in o.image_shape.split("x"))
        assert len(o.shape) == 3 and min(o.shape) > 0
    except (ValueError, AssertionError):
        a.error("--image_shape=%s: expected CHANNELSxHEIGHTxWIDTH such as 3x96x96" % o.image_shape)
    return o


def main(argv):
    o = parse_args(argv)
    if o.threads > 0:
        torch.set_num_threads(o.threads)
    torch.manual_seed(o.seed)
    policy = ACTPolicy(o)
    policy.train()
    n_params = sum(p.numel() for p in policy.parameters())
    print("policy: act-torch, %d parameters (%.1fM)" % (n_params, n_params / 1e6))
    if o.count_only:
        return 0
    # LeRobot's get_optim_params: the backbone in a group of its own
    named = [(n, p) for n, p in policy.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if not n.startswith("model.backbone")]},
              {"params": [p for n, p in named if n.startswith("model.backbone")], "lr": o.optimizer_lr_backbone}]
    groups = [g for g in groups if g["params"]]
    opt = torch.optim.AdamW(groups, lr=o.optimizer_lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=o.optimizer_weight_decay)
    B = o.batch_size
    state = torch.randn(B, o.state_dim)
    images = [torch.randn(B, *o.shape) for _ in range(o.cameras)]
    action = torch.randn(B, o.chunk_size, o.action_dim)
    action_is_pad = torch.zeros(B, o.chunk_size, dtype=torch.bool)
    print("batch: %d samples of %d camera(s) %s, state %d, action %d"
          % (B, o.cameras, o.image_shape, o.state_dim, o.action_dim))
    print("threads: %d" % torch.get_num_threads())
    sys.stdout.flush()
    times, losses = [], []
    for s in range(o.warmup + o.steps):
        t0 = time.perf_counter()
        loss = policy(state, images, action, action_is_pad)
        losses.append(loss.item())  # LeRobot reads the loss every step
        loss.backward()
        nn.utils.clip_grad_norm_(policy.parameters(), 10.0)
        opt.step()
        opt.zero_grad()
        t1 = time.perf_counter()
        if s >= o.warmup:
            times.append(t1 - t0)
    median = statistics.median(times)
    print("steps: %d timed after %d warm-up" % (o.steps, o.warmup))
    print("loss: %.6g at the first step, %.6g at the last" % (losses[0], losses[-1]))
    print("s/step: median %.4f, min %.4f, max %.4f" % (median, min(times), max(times)))
    print("samples/s: %.2f (batch / median)" % (B / median))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
