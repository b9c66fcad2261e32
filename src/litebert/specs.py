"""What a model package is, and the registry of them: the bottom of the package, no torch.

    SPECS["xlnet"]           the ModelSpec that litebert/models/xlnet/__init__.py registers
    model_spec("xlnet")      the same, importing litebert.models.xlnet on first use
    register_spec(spec)      what a package's __init__.py calls (one outside litebert too)

One package per checkpoint family (litebert/models/<name>/, torchtitan's layout) holds what
the family is: its backbone module when it defines one (`model.py`), that backbone's own
settings (`config.py`), its presets (`presets.py`), its adapter to transformers' layout
(`adapter.py`) and its fine-tuning defaults (`finetune.py`). Its `__init__.py` builds one
ModelSpec from them and registers it. The built-in packages are BUILT_IN, a tuple of names
imported on first lookup (as transformers' CONFIG_MAPPING_NAMES): adding one is a package
and one name there. A package elsewhere (a test's, a user's) registers on its own import.

Nothing here imports a layer above, and registering imports no torch: a spec holds its
config class, presets and fine-tuning rule as values, and names the modules of its adapter
and its backbone, imported when a config.json is read or a model built. ModelConfig
(litebert.config) reads the registry, so reading a config.json needs nothing but the packages
of the families it names.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# Our own layout's model_type (litebert/models/litebert/), for what no transformers family holds.
OWN_LAYOUT = "litebert"
# The packages under litebert.models, in the order families and presets are listed.
BUILT_IN = ("albert", "bert", "electra", "litebert", "modernbert", "roberta", "xlnet")


@dataclass(frozen=True)
class FinetuneDefaults:
    """A family's fine-tuning settings for one task, as its paper gives them.

    None: the task recipe's (litebert.tasks.registry's TASKS; ALBERT's Table 14 where it has
    the task).
    The recipe always sets the batch size, the number of steps and the sequence length: a
    paper's epochs are a count over its own data at its own batch size, and the recipe's
    budget, the same for every family, keeps runs of all families comparable.
    """

    source: str  # the paper and table the values come from, recorded in results.json
    lr: float | None = None  # peak learning rate
    warmup_share: float | None = None  # warm-up as a share of max_steps; None: recipe's steps
    dropout: float | None = None  # hidden and attention dropout
    # Not in the recipes; by default ALBERT's released fine-tuning code's (and BERT's).
    weight_decay: float = 0.01  # AdamW's decoupled weight decay
    layer_decay: float = 1.0  # layer-wise lr decay (litebert.tasks.layer_decay); 1 is off
    layer_decay_rule: str = "head-to-embeddings"  # what it slows (tasks/layer_decay.py)
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-6  # ALBERT's and BERT's AdamWeightDecay epsilon

    def values(self) -> dict[str, float | str]:
        """The settings this family gives (the recipe's where None), by FinetuneConfig field
        name, but warmup_share, which sets warmup_steps once max_steps is known."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "source" and getattr(self, f.name) is not None}


# (the model's ModelConfig, the task's name in TASKS) -> what the family fine-tunes it with.
FinetuneRule = Callable[[Any, str], FinetuneDefaults]


@dataclass(frozen=True)
class ModelSpec:
    """One model package: what it is, by one name."""

    # config.json's model_type of the family's layout; for a package that defines a
    # backbone, also the backbone's name (config.backbone).
    name: str
    title: str  # the name in prose: "BERT", "RoBERTa", ...
    backbone: str  # the registered backbone its models build on ("albert" for BERT)
    # The tokenizer kind its pre-training trains (litebert.tokenization.train_tokenizer).
    tokenizer: str
    finetune: FinetuneRule  # its fine-tuning defaults for (config, task)
    # The module whose `ADAPTER` is its families.FamilyAdapter (config.json and state-dict
    # layout), imported on first use (`adapter`): the adapters need torch, and the registry,
    # the presets and the help texts built from them do not. None: its models are saved in
    # another family's layout (their presets name that model_type).
    adapter_module: str | None = None
    # Preset name -> flat ModelConfig fields (ModelConfig.from_preset); names are global.
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # For a package that defines a backbone: its BackboneConfig subclass, and the module
    # whose import registers the backbone class (model/backbone.py's register_backbone).
    # Kept apart from the spec's own import so that reading a config needs no nn.Module.
    backbone_config: type | None = None
    backbone_module: str | None = None

    @property
    def adapter(self) -> Any:
        """Its family adapter (adapter_module's ADAPTER), None when it has no layout."""
        if self.adapter_module is None:
            return None
        return importlib.import_module(self.adapter_module).ADAPTER


SPECS: dict[str, ModelSpec] = {}  # name -> spec, in registration order


def register_spec(spec: ModelSpec) -> ModelSpec:
    """Add `spec` (its package's __init__.py calls this). A name or a preset name already
    taken by another spec is an error; registering the same spec again is not."""
    if SPECS.get(spec.name, spec) is not spec:
        raise ValueError(f"a model named {spec.name!r} is already registered; give the "
                         f"ModelSpec another name")
    for other in SPECS.values():
        taken = sorted(set(other.presets) & set(spec.presets)) if other is not spec else []
        if taken:
            raise ValueError(f"ModelSpec {spec.name!r}: presets {', '.join(taken)} belong "
                             f"to {other.name!r} already; rename them")
    if (spec.backbone_config is None) != (spec.backbone_module is None):
        raise ValueError(f"ModelSpec {spec.name!r}: a package that defines a backbone gives "
                         f"both backbone_config and backbone_module, else neither")
    SPECS[spec.name] = spec
    return spec


def load_built_ins() -> None:
    """Import every package of BUILT_IN (each registers its spec); cheap once done."""
    for name in BUILT_IN:
        importlib.import_module(f"litebert.models.{name}")


def find_spec(name: str) -> ModelSpec | None:
    """The spec called `name`, importing its built-in package first if need be; None when
    no package registers one."""
    if name not in SPECS and name in BUILT_IN:
        importlib.import_module(f"litebert.models.{name}")
    return SPECS.get(name)


def model_spec(name: str) -> ModelSpec:
    """The spec called `name`; LookupError with a sentence naming the known ones otherwise."""
    found = find_spec(name)
    if found is None:
        known = ", ".join(repr(spec.name) for spec in all_specs())
        raise LookupError(f"no model package is registered as {name!r}; litebert knows "
                          f"{known} (a package of your own calls "
                          f"litebert.specs.register_spec on import)")
    return found


def all_specs() -> Iterator[ModelSpec]:
    """Every registered spec: the built-ins in BUILT_IN's order, then the others."""
    load_built_ins()
    others = [spec for name, spec in SPECS.items() if name not in BUILT_IN]
    return iter([SPECS[name] for name in BUILT_IN] + others)


class PresetTable(Mapping[str, Mapping[str, Any]]):
    """Every spec's presets by name, read-only, loading the built-ins on first access
    (litebert.config.PRESETS)."""

    def _table(self) -> dict[str, Mapping[str, Any]]:
        return {name: fields for spec in all_specs() for name, fields in spec.presets.items()}

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        return self._table()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return f"PresetTable({', '.join(self._table())})"
