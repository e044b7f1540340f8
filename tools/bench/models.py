"""Models for `fuser-bench --models`: whole networks through `torch.compile(model, backend="fuser")`.

    model, make_batch = build("gpt2", size="tiny", source="own")
    batch = make_batch(0)
    loss(model, batch).backward()                  # a training step: then opt.step(); opt.zero_grad()
    with torch.no_grad():
        y = output(model, batch)                   # the forward pass alone (logits or activations)

Four models, each at two sizes ("bench": the benchmark's; "tiny": a few hundred thousand
parameters at most, for CPU tests) and from two sources: "hf" (Hugging Face transformers' own
module, built from a config with random weights; never downloaded) or "own" (the same
architecture written here in plain torch, so that the tests need no transformers);
`source="auto"` takes "hf" when transformers is importable.

    gpt2        GPT-2 small: token + position embeddings, 12 pre-LN blocks (fused qkv Linear,
                causal attention through scaled_dot_product_attention, GELU(tanh) MLP 4x), final
                LN, LM head tied to the token embedding, next-token cross-entropy. Bench: 8 x 1024.
                HF: GPT2LMHeadModel(GPT2Config()) (its "gelu_new" is the tanh GELU written out).
    llama       a Llama-style decoder: RMSNorm, rotary embeddings, grouped-query attention (16
                heads, 4 KV heads) through SDPA, SwiGLU MLP, untied head; hidden 2048,
                intermediate 5632, 4 layers, vocabulary 32000. Bench: 4 x 2048.
    bert_layer  one BERT-base encoder layer (hidden 768, 12 heads, intermediate 3072, post-LN,
                GELU(erf), no mask) on activations. Bench: 32 x 512.
    mlp         x -> LayerNorm(x + Linear(16384, 4096)(GELU(tanh)(Linear(4096, 16384)(x)))).
                Bench: 8192 tokens. It has no Hugging Face form ("hf" is refused).

Every dropout is 0, so that one step computes the same numbers in eager PyTorch, Inductor and
fuser (the benchmark compares losses and gradients between them), and HF models are built with
`use_cache=False`. Language models take `{"input_ids", "labels"}` (labels = the ids; the loss
shifts them, as Hugging Face's does). The two activation models take `{"x", "target"}` and their
loss is the mean squared error against a random target: the mean, or the mean square, of a
LayerNorm output hardly depends on its input (a row of a normalized output sums to the bias and
its squares to about the row length), so their gradients would be near zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

MODELS = ("gpt2", "llama", "bert_layer", "mlp")
SIZES = ("bench", "tiny")
SOURCES = ("auto", "hf", "own")


@dataclass(frozen=True)
class Config:
    """One model at one size. Fields a model does not use stay at their defaults."""
    kind: str                 # "lm" (token ids in) or "act" (activations in)
    batch: int
    seq: int                  # tokens per sequence (act models: rows = batch * seq)
    hidden: int
    layers: int = 1
    heads: int = 1
    kv_heads: int = 0         # 0: as many as heads
    intermediate: int = 0
    vocab: int = 0
    positions: int = 0        # GPT-2's position table
    eps: float = 1e-5

    def input_shape(self) -> tuple[int, ...]:
        if self.kind == "lm":
            return (self.batch, self.seq)
        return (self.batch * self.seq, self.hidden) if self.seq == 1 else (self.batch, self.seq, self.hidden)


CONFIGS: dict[str, dict[str, Config]] = {
    "gpt2": {
        "bench": Config("lm", 8, 1024, 768, layers=12, heads=12, intermediate=3072, vocab=50257, positions=1024),
        "tiny": Config("lm", 2, 16, 64, layers=2, heads=4, intermediate=256, vocab=128, positions=16),
    },
    "llama": {
        "bench": Config("lm", 4, 2048, 2048, layers=4, heads=16, kv_heads=4, intermediate=5632, vocab=32000,
                        positions=2048, eps=1e-6),
        "tiny": Config("lm", 2, 16, 64, layers=2, heads=4, kv_heads=2, intermediate=172, vocab=128, positions=16,
                       eps=1e-6),
    },
    "bert_layer": {
        "bench": Config("act", 32, 512, 768, heads=12, intermediate=3072, eps=1e-12),
        "tiny": Config("act", 2, 16, 64, heads=4, intermediate=256, eps=1e-12),
    },
    "mlp": {  # rows of tokens: seq=1, batch = tokens
        "bench": Config("act", 8192, 1, 4096, intermediate=16384),
        "tiny": Config("act", 32, 1, 64, intermediate=256),
    },
}


def config(name: str, size: str = "bench") -> Config:
    if name not in CONFIGS:
        raise ValueError(f"unknown model {name!r}; the models are {', '.join(MODELS)}")
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    return CONFIGS[name][size]


def hf_available() -> bool:
    try:
        import transformers  # noqa: F401
    except Exception:
        return False
    return True


def resolve_source(name: str, source: str = "auto") -> str:
    """"hf" or "own" for this model; "auto" is "hf" where transformers is importable."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if name == "mlp":
        if source == "hf":
            raise ValueError("mlp has no Hugging Face form: use source='own' (or 'auto')")
        return "own"
    if source == "auto":
        return "hf" if hf_available() else "own"
    return source


# ============================================================================ own modules


def _normal_init(module: nn.Module, std: float = 0.02) -> None:
    """GPT-2's and Llama's initialization: N(0, std) weights, zero biases, unit norm weights."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, std)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """[B, H, S, D] tensors -> [B, S, H * D]."""
    y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    b, h, s, d = y.shape
    return y.transpose(1, 2).reshape(b, s, h * d)


def _split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    b, s, _ = x.shape
    return x.view(b, s, heads, -1).transpose(1, 2)


def _lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy in f32: position t predicts label t + 1 (Hugging Face's shift)."""
    v = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, v).float(), labels[:, 1:].reshape(-1))


class GPT2Block(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.heads = c.heads
        self.ln_1 = nn.LayerNorm(c.hidden, eps=c.eps)
        self.qkv = nn.Linear(c.hidden, 3 * c.hidden)
        self.attn_proj = nn.Linear(c.hidden, c.hidden)
        self.ln_2 = nn.LayerNorm(c.hidden, eps=c.eps)
        self.fc = nn.Linear(c.hidden, c.intermediate)
        self.fc_proj = nn.Linear(c.intermediate, c.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.ln_1(x)).split(x.shape[-1], dim=-1)
        a = _attention(_split_heads(q, self.heads), _split_heads(k, self.heads), _split_heads(v, self.heads), True)
        x = x + self.attn_proj(a)
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.wte = nn.Embedding(c.vocab, c.hidden)
        self.wpe = nn.Embedding(c.positions, c.hidden)
        self.blocks = nn.ModuleList(GPT2Block(c) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.hidden, eps=c.eps)
        _normal_init(self)
        for b in self.blocks:  # GPT-2's scaled init of the projections into the residual stream
            for proj in (b.attn_proj, b.fc_proj):
                nn.init.normal_(proj.weight, 0.0, 0.02 / math.sqrt(2 * c.layers))

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # the head is the token embedding
        return logits if labels is None else _lm_loss(logits, labels)


class RMSNorm(nn.Module):
    def __init__(self, n: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()  # as Llama's: statistics in f32, the scale applied in the input's type
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.heads, self.kv_heads = c.heads, c.kv_heads or c.heads
        hd = c.hidden // c.heads
        self.input_norm = RMSNorm(c.hidden, c.eps)
        self.q_proj = nn.Linear(c.hidden, c.heads * hd, bias=False)
        self.k_proj = nn.Linear(c.hidden, self.kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(c.hidden, self.kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(c.heads * hd, c.hidden, bias=False)
        self.post_norm = RMSNorm(c.hidden, c.eps)
        self.gate_proj = nn.Linear(c.hidden, c.intermediate, bias=False)
        self.up_proj = nn.Linear(c.hidden, c.intermediate, bias=False)
        self.down_proj = nn.Linear(c.intermediate, c.hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        h = self.input_norm(x)
        q = _split_heads(self.q_proj(h), self.heads)
        k = _split_heads(self.k_proj(h), self.kv_heads)
        v = _split_heads(self.v_proj(h), self.kv_heads)
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        rep = self.heads // self.kv_heads  # grouped-query attention: each KV head serves `rep` heads
        if rep > 1:
            b, kvh, s, d = k.shape
            k = k[:, :, None].expand(b, kvh, rep, s, d).reshape(b, kvh * rep, s, d)
            v = v[:, :, None].expand(b, kvh, rep, s, d).reshape(b, kvh * rep, s, d)
        x = x + self.o_proj(_attention(q, k, v, True))
        h = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, c: Config, rope_theta: float = 10000.0):
        super().__init__()
        hd = c.hidden // c.heads
        self.embed_tokens = nn.Embedding(c.vocab, c.hidden)
        self.blocks = nn.ModuleList(LlamaBlock(c) for _ in range(c.layers))
        self.norm = RMSNorm(c.hidden, c.eps)
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)
        self.head_dim, self.rope_theta = hd, rope_theta
        _normal_init(self)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        # rotary angles in f32 whatever the model's dtype (computed here: a buffer would follow .to(dtype))
        dev, hd = input_ids.device, self.head_dim
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd))
        pos = torch.arange(input_ids.shape[1], device=dev, dtype=torch.float32)
        freqs = pos[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for b in self.blocks:
            x = b(x, cos, sin)
        logits = self.lm_head(self.norm(x))
        return logits if labels is None else _lm_loss(logits, labels)


class BertLayer(nn.Module):
    """Post-LN: LN(x + attn(x)), then LN(h + ffn(h)); PyTorch's default Linear init."""

    def __init__(self, c: Config):
        super().__init__()
        self.heads = c.heads
        self.query = nn.Linear(c.hidden, c.hidden)
        self.key = nn.Linear(c.hidden, c.hidden)
        self.value = nn.Linear(c.hidden, c.hidden)
        self.attn_out = nn.Linear(c.hidden, c.hidden)
        self.attn_norm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.intermediate = nn.Linear(c.hidden, c.intermediate)
        self.output = nn.Linear(c.intermediate, c.hidden)
        self.out_norm = nn.LayerNorm(c.hidden, eps=c.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (_split_heads(p(x), self.heads) for p in (self.query, self.key, self.value))
        h = self.attn_norm(x + self.attn_out(_attention(q, k, v, False)))
        return self.out_norm(h + self.output(F.gelu(self.intermediate(h))))


class MLPBlock(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.fc1 = nn.Linear(c.hidden, c.intermediate)
        self.fc2 = nn.Linear(c.intermediate, c.hidden)
        self.norm = nn.LayerNorm(c.hidden, eps=c.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.fc2(F.gelu(self.fc1(x), approximate="tanh")))


# ============================================================================ Hugging Face modules


class _HFLayer(nn.Module):
    """A Hugging Face layer taking and returning a tensor (some versions return a tuple)."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.layer(x)
        return y[0] if isinstance(y, (tuple, list)) else y


def _hf_model(name: str, c: Config) -> nn.Module:
    import transformers as tf

    common = {"use_cache": False, "bos_token_id": 0, "eos_token_id": 0, "pad_token_id": None}
    if name == "gpt2":
        cfg = tf.GPT2Config(vocab_size=c.vocab, n_positions=c.positions, n_embd=c.hidden, n_layer=c.layers,
                            n_head=c.heads, n_inner=c.intermediate, layer_norm_epsilon=c.eps,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, summary_first_dropout=0.0, **common)
        cfg._attn_implementation = "sdpa"
        return tf.GPT2LMHeadModel(cfg)
    if name == "llama":
        cfg = tf.LlamaConfig(vocab_size=c.vocab, hidden_size=c.hidden, intermediate_size=c.intermediate,
                             num_hidden_layers=c.layers, num_attention_heads=c.heads,
                             num_key_value_heads=c.kv_heads or c.heads, max_position_embeddings=c.positions,
                             rms_norm_eps=c.eps, tie_word_embeddings=False, attention_dropout=0.0, **common)
        cfg._attn_implementation = "sdpa"
        return tf.LlamaForCausalLM(cfg)
    if name == "bert_layer":
        from transformers.models.bert.modeling_bert import BertLayer as HFBertLayer

        cfg = tf.BertConfig(hidden_size=c.hidden, num_attention_heads=c.heads, intermediate_size=c.intermediate,
                            hidden_act="gelu", layer_norm_eps=c.eps, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0)
        cfg._attn_implementation = "sdpa"  # a standalone layer gets no dispatch from a PreTrainedModel
        return _HFLayer(HFBertLayer(cfg))
    raise ValueError(f"{name} has no Hugging Face form")


_OWN: dict[str, Callable[[Config], nn.Module]] = {
    "gpt2": GPT2, "llama": Llama, "bert_layer": BertLayer, "mlp": MLPBlock,
}


# ============================================================================ the API


def build(name: str, size: str = "bench", source: str = "auto", dtype: torch.dtype = torch.float32,
          device: Any = "cpu", seed: int = 0, config_override: dict[str, Any] | None = None,
          ) -> tuple[nn.Module, Callable[[int], dict[str, torch.Tensor]]]:
    """(model, make_batch): the model with random weights (torch.manual_seed(seed) first), in
    `dtype` on `device` (built there: "meta" allocates nothing), in training mode; make_batch(seed)
    gives the inputs of one step on the same device (float inputs in `dtype`).
    `config_override` replaces fields of the size's Config (tests: smaller shapes)."""
    c = config(name, size)
    if config_override:
        c = replace(c, **config_override)
    src = resolve_source(name, source)
    device = torch.device(device)
    torch.manual_seed(seed)
    with device:
        model = _hf_model(name, c) if src == "hf" else _OWN[name](c)
    model = model.to(dtype=dtype)
    model.train()
    model.bench_info = {"name": name, "size": size, "source": src, "config": c}  # for reports
    return model, batch_maker(c, dtype, device)


def batch_maker(c: Config, dtype: torch.dtype, device: Any) -> Callable[[int], dict[str, torch.Tensor]]:
    device = torch.device(device)

    def make_batch(seed: int) -> dict[str, torch.Tensor]:
        if device.type == "meta":
            g = None
        else:
            g = torch.Generator(device=device).manual_seed(seed)
        if c.kind == "lm":
            ids = torch.randint(0, c.vocab, c.input_shape(), generator=g, device=device)
            return {"input_ids": ids, "labels": ids.clone()}
        x = torch.randn(c.input_shape(), generator=g, device=device, dtype=torch.float32).to(dtype)
        target = torch.randn(c.input_shape(), generator=g, device=device, dtype=torch.float32).to(dtype)
        return {"x": x, "target": target}

    return make_batch


def output(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The forward pass without the loss: logits [B, S, V] for language models, else the
    activations. `model` may be a torch.compile'd one."""
    if "input_ids" in batch:
        y = model(input_ids=batch["input_ids"])
        return y if isinstance(y, torch.Tensor) else y.logits
    return model(batch["x"])


def loss(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The scalar f32 training loss of one batch (see the module docstring)."""
    if "input_ids" in batch:
        y = model(input_ids=batch["input_ids"], labels=batch["labels"])
        return y if isinstance(y, torch.Tensor) else y.loss
    return F.mse_loss(model(batch["x"]).float(), batch["target"].float())


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
