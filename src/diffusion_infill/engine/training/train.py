"""`diffusion-infill train`: tokenizer, corpus and a resumable training loop.

Everything that decides the result is in `TrainConfig` and the seed; the corpus manifest,
the config, the CPU time spent and the device's wall time are written next to the exported
weights. The same loop runs on the CPU or a CUDA GPU (`Runtime`): on a GPU, batches are made
by DataLoader worker processes and the budget is wall time.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, DiffusionGemmaForBlockDiffusion, PreTrainedTokenizerFast

from diffusion_infill.engine.baseline.autoregressive import FIM_TOKENS, AutoregressiveEngine, FimIds, FimModel, FimSpec
from diffusion_infill.engine.completion.canvas import CanvasSpec
from diffusion_infill.engine.completion.confidence import CALIBRATION_FILE
from diffusion_infill.engine.completion.denoise_settings import TUNING_FILE, DenoiseSettings
from diffusion_infill.engine.completion.infill import InfillEngine, InfillRequest
from diffusion_infill.engine.loading import EMBEDDED_MODEL, LoadedModel
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.engine.tiny import TinyArchitecture, config_token_ids, tiny_config, tiny_model
from diffusion_infill.engine.tokens import SpecialIds
from diffusion_infill.engine.training import corpus, fim, objective, progress, pypi_corpus
from diffusion_infill.engine.training.probes import held_out_line_cases
from diffusion_infill.engine.training.tokenizer import train_tokenizer

log = logging.getLogger("diffusion_infill.train")
CALIBRATION_FILES = (CALIBRATION_FILE, TUNING_FILE)  # fitted to one set of weights: an export drops them
CHECKPOINT_EVERY_S = 180.0  # a checkpoint at least this often, however slow the steps (and on Ctrl-C)


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    objective_kind: str = "diffusion"  # or "fim": the autoregressive baseline (FimTrainer)
    noise: str = "mask"  # "mask" learned faster than "uniform" in the spikes (DESIGN.md)
    learning_rate: float = 2e-3
    warmup_steps: int = 200
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    max_prefix: int = 128
    # bf16: matmuls under torch.autocast in bfloat16 (weights and optimizer stay float32);
    # AVX-512 BF16 CPUs run them about 2x as fast.
    precision: str = "fp32"
    ar_first_hours: float = 0.0  # CPU hours of the encoder's autoregressive loss alone, before the joint loss
    log_every: int = 25
    checkpoint_every: int = 200
    probe_every: int = 250
    export_every: int = 500
    probes: int = 12
    corpus: str = "stdlib"  # or "stdlib+pypi": the PyPI stream (engine.training.pypi_corpus) beside the stdlib
    architecture: TinyArchitecture = field(default_factory=TinyArchitecture)
    objective: objective.ObjectiveConfig = field(default_factory=objective.ObjectiveConfig)


class TrainingSetupError(ValueError):
    """A run that cannot start as asked (the command line says so in one line)."""


class Interrupted(Exception):
    """Ctrl-C during the steps: the checkpoint holds the last step done, and the run resumes from it."""

    def __init__(self, step: int, checkpoint: Path):
        super().__init__(f"interrupted at step {step}")
        self.step, self.checkpoint = step, checkpoint


@dataclass(frozen=True)
class Runtime:
    """Where a run trains; none of it changes what a step computes, so it is not in the recipe's config."""

    device: torch.device = torch.device("cpu")
    workers: int = 0  # DataLoader processes making batches; 0: in the training process, reproducibly
    corpus_dir: Path = pypi_corpus.DEFAULT_DIR  # where the PyPI token stream lies, for corpus "stdlib+pypi"
    say: Callable[[str], None] = progress.silent  # where the run says what it is doing (engine.training.progress)

    @property
    def name(self) -> str:
        return torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"


class _Batches(torch.utils.data.IterableDataset):
    """A batch maker as a DataLoader source; each worker draws from its own seed."""

    def __init__(self, maker: objective.BatchMaker, seed: int):
        self.maker, self.seed = maker, seed

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is not None:
            self.maker.rng = np.random.default_rng([self.seed, info.id])
        while True:
            yield self.maker.make()


def to_device(batch, device: torch.device):
    """A batch dataclass of tensors, moved to `device`."""
    moved = {f.name: getattr(batch, f.name).to(device, non_blocking=True) for f in dataclasses.fields(batch)}
    return dataclasses.replace(batch, **moved)


@dataclass(frozen=True)
class Cooldown:
    """The learning rate falls linearly to `FLOOR` of its value over the last `length`
    CPU seconds before `end`. It depends on the CPU time alone, so a resumed run follows it."""

    end: float  # CPU seconds: the budget
    length: float

    FLOOR = 0.1


def cooldown_factor(cpu_seconds: float, cooldown: Cooldown | None) -> float:
    if cooldown is None:
        return 1.0
    left = min(1.0, max(0.0, (cooldown.end - cpu_seconds) / cooldown.length))
    return Cooldown.FLOOR + (1 - Cooldown.FLOOR) * left


def save_recipe(export_dir: Path, step: int, cpu_seconds: float, facts: dict, continued_from: dict | None) -> None:
    """Writes `recipe.json` beside exported weights: the steps and CPU time behind them (which a
    continuation counts on from), what else describes the run (`facts`), and the recipe of the
    weights it continued from."""
    recipe = {"step": step, "cpu_hours": round(cpu_seconds / 3600, 3), **facts}
    if continued_from is not None:
        recipe["continued_from"] = continued_from
    (export_dir / "recipe.json").write_text(json.dumps(recipe, indent=2) + "\n")


def inherited_recipe(init_from: Path | None) -> dict | None:
    """The `recipe.json` of exported weights a run continues from (None from scratch)."""
    recipe = init_from / "recipe.json" if init_from is not None else None
    return json.loads(recipe.read_text()) if recipe is not None and recipe.exists() else None


def inherited_progress(init_from: Path | None) -> tuple[int, float]:
    """The optimizer steps and CPU seconds behind exported weights, so a run continuing from
    them counts on and a CPU budget stays a budget in all."""
    trained = inherited_recipe(init_from)
    return (int(trained["step"]), float(trained["cpu_hours"]) * 3600) if trained else (0, 0.0)


def _tokenize(documents: list[corpus.Document], tokenizer) -> dict[str, list[list[int]]]:
    by_kind: dict[str, list[list[int]]] = {}
    texts = [doc.text for doc in documents]
    encoded = tokenizer.backend_tokenizer.encode_batch(texts, add_special_tokens=False)
    for doc, enc in zip(documents, encoded, strict=False):
        by_kind.setdefault(doc.kind, []).append(enc.ids)
    return by_kind


class Trainer:
    """The diffusion objective on the clamped canvas; `FimTrainer` swaps in the baseline's
    tokenizer, model, batches and loss, and everything else is shared."""

    def __init__(
        self, config: TrainConfig, run_dir: Path, export_dir: Path, init_from: Path | None, runtime: Runtime = Runtime()
    ):
        self.config, self.run_dir, self.export_dir, self.runtime = config, run_dir, export_dir, runtime
        run_dir.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(config.seed)
        # A continuation draws fresh data and noise: the first run's seeds would replay its start.
        self.step, self.cpu_seconds = inherited_progress(init_from)
        # The steps before the continuation ran under another recipe: its recipe.json goes along.
        self.continued_from = inherited_recipe(init_from)
        self.wall_seconds = float((self.continued_from or {}).get("wall_hours", 0.0)) * 3600
        self.warmup_from = self.step  # a fresh optimizer warms up again
        seed = config.seed + self.step
        say = runtime.say
        say("train: reading the corpus")
        documents = corpus.training_documents(config.seed)
        self.manifest = corpus.manifest(documents)
        self.tokenizer = self._make_tokenizer(documents, init_from)
        self.ids = SpecialIds.from_tokenizer(self.tokenizer)
        vocab = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        newline = np.array(["Ċ" in token for token in vocab])  # byte-level BPE spells "\n" as "Ċ"
        say(f"train: tokenizing {len(documents):,} files")
        streams = objective.Streams(_tokenize(documents, self.tokenizer), self.ids, newline)
        if config.corpus == "stdlib+pypi":
            self._add_pypi(streams)
        elif config.corpus != "stdlib":
            raise TrainingSetupError(f"unknown corpus {config.corpus!r}: expected stdlib or stdlib+pypi")
        self.batches = self._make_batches(streams, np.random.default_rng(seed))
        self.generator = torch.Generator().manual_seed(seed)
        say(f"train: {'loading the weights of ' + str(init_from) if init_from else 'making the model'}")
        self.model = self._make_model(init_from).to(runtime.device)
        # The parent's confidence gate goes along with every export (fitted for its weights: the
        # command line says so), rather than an export that shows everything.
        gate = init_from / CALIBRATION_FILE if init_from is not None else None
        self.parent_gate = gate.read_bytes() if gate is not None and gate.exists() else None
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(),
            lr=config.learning_rate,
            betas=(0.9, 0.98),
            weight_decay=config.weight_decay,
            fused=runtime.device.type == "cuda",
        )
        self.cooldown: Cooldown | None = None  # set by train()
        self.cooldown_on_wall, self._started_at = False, time.time()
        self.probes = held_out_line_cases(config.probes, seed=1234)
        self._resume()

    def _add_pypi(self, streams: objective.Streams) -> None:
        try:
            extra = pypi_corpus.load_stream(self.runtime.corpus_dir)
        except (FileNotFoundError, ValueError) as error:
            raise TrainingSetupError(str(error)) from None
        streams.streams["python"] = np.concatenate([streams.streams["python"], extra])
        self.manifest["pypi"] = pypi_corpus.summary()

    def _make_tokenizer(self, documents: list[corpus.Document], init_from: Path | None):
        tokenizer_dir = init_from or self.run_dir
        if (tokenizer_dir / "tokenizer.json").exists():
            return PreTrainedTokenizerFast.from_pretrained(tokenizer_dir)
        self.runtime.say(f"train: training the tokenizer on {len(documents):,} files (a minute or two)")
        tokenizer = train_tokenizer(documents, self.config.architecture.vocab_size, self.config.seed)
        tokenizer.save_pretrained(self.run_dir)
        return tokenizer

    def _make_batches(self, streams: objective.Streams, rng: np.random.Generator):
        return objective.BatchMaker(streams, self.ids, self.config.objective, rng, tokenizer=self.tokenizer)

    def _make_model(self, init_from: Path | None) -> torch.nn.Module:
        if init_from is not None:
            return DiffusionGemmaForBlockDiffusion.from_pretrained(init_from, dtype=torch.float32, use_kernels=False)
        token_ids = config_token_ids(self.tokenizer)
        return tiny_model(tiny_config(self.config.architecture, token_ids, self.config.objective.canvas_length))

    def _next_batch(self):
        """The next batch on the run's device: made here, or by the DataLoader's workers."""
        batch = self._made_batch()
        self.batch_tokens = batch.tokens
        return batch

    def _made_batch(self):
        if self.runtime.workers == 0:
            return to_device(self.batches.make(), self.runtime.device)
        if not hasattr(self, "_loader"):
            source = _Batches(self.batches, self.config.seed + self.step)
            loader = torch.utils.data.DataLoader(
                source,
                batch_size=None,
                num_workers=self.runtime.workers,
                prefetch_factor=4,
                pin_memory=self.runtime.device.type == "cuda",
            )
            self._loader = iter(loader)
        return to_device(next(self._loader), self.runtime.device)

    def _loss(self) -> tuple[torch.Tensor, dict[str, float]]:
        batch = self._next_batch()
        if self.cpu_seconds < self.config.ar_first_hours * 3600:
            return objective.ar_only_loss(self.model, batch)
        return objective.loss(self.model, batch, self.ids, self.config.objective, self.config.noise, self.generator)

    def _probe_engine(self):
        return InfillEngine(self._loaded(), EngineSettings(mode="single-line", denoise=DenoiseSettings()))

    def _save_spec(self, directory: Path) -> None:
        self._loaded().spec.save(directory)

    @property
    def checkpoint_path(self) -> Path:
        return self.run_dir / "checkpoint.pt"

    def _resume(self) -> None:
        if not self.checkpoint_path.exists():
            return
        state = torch.load(self.checkpoint_path, weights_only=False, map_location=self.runtime.device)
        try:
            self.model.load_state_dict(state["model"])
        except RuntimeError:
            raise TrainingSetupError(
                f"{self.checkpoint_path} holds a model of another shape than this run's "
                "(--shape); resume it with its own, or use another --run-dir"
            ) from None
        self.optimizer.load_state_dict(state["optimizer"])
        self.step, self.cpu_seconds = state["step"], state["cpu_seconds"]
        self.warmup_from = state.get("warmup_from", 0)
        self.wall_seconds = state.get("wall_seconds", self.wall_seconds)
        self.continued_from = state.get("continued_from")
        self.batches.rng.bit_generator.state = state["data_rng"]
        self.generator.set_state(state["torch_rng"])
        self.runtime.say(f"train: resumed from {self.checkpoint_path} at step {self.step:,}")

    def _save_checkpoint(self) -> None:
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "step": self.step,
            "cpu_seconds": self.cpu_seconds,
            "wall_seconds": self.wall_seconds,
            "warmup_from": self.warmup_from,
            "continued_from": self.continued_from,
            "data_rng": self.batches.rng.bit_generator.state,
            "torch_rng": self.generator.get_state(),
        }
        torch.save(state, self.checkpoint_path.with_suffix(".tmp"))
        self.checkpoint_path.with_suffix(".tmp").replace(self.checkpoint_path)
        self.saved_at = time.monotonic()

    def _learning_rate(self) -> float:
        warmed = self.step - self.warmup_from + 1
        rate = self.config.learning_rate * min(1.0, warmed / self.config.warmup_steps)
        return rate * cooldown_factor(self._cooldown_clock(), self.cooldown)

    def _cooldown_clock(self) -> float:
        """CPU seconds in all for a CPU-hour budget, wall seconds of this run for a wall-time one."""
        return time.time() - self._started_at if self.cooldown_on_wall else self.cpu_seconds

    def _loaded(self) -> LoadedModel:
        c = self.config
        spec = CanvasSpec(
            noise=c.noise,
            gap_slots=c.objective.gap_slots,
            suffix_head=c.objective.suffix_head,
            max_prefix=c.max_prefix,
            context_tokens=c.objective.context_tokens,
        )
        return LoadedModel(self.model, self.tokenizer, spec, self.ids, "training")

    def run_probes(self) -> dict:
        self.model.eval()
        engine = self._probe_engine()
        results, exact = [], 0
        for probe in self.probes:
            final = list(engine.complete(InfillRequest(probe.prefix, probe.suffix, "python")))[-1]
            exact += final.text.strip() == probe.expected.strip()
            results.append({"name": probe.name, "expected": probe.expected, "got": final.text, "steps": final.step})
        self.model.train()
        return {"step": self.step, "exact": exact, "cases": results}

    def export(self) -> None:
        """Weights, tokenizer, config, canvas spec and recipe, written together: all are staged
        first, then moved in. The calibration and sampler tuning beside older weights were chosen
        for them, so they are removed first: the export is uncalibrated until calibrated again."""
        self.export_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.export_dir, prefix=".export-") as staging:
            self._write_export(Path(staging))
            for name in CALIBRATION_FILES:
                (self.export_dir / name).unlink(missing_ok=True)
            for written in Path(staging).iterdir():
                written.replace(self.export_dir / written.name)

    def _write_export(self, directory: Path) -> None:
        self.model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
        self._save_spec(directory)
        if self.parent_gate is not None:
            (directory / CALIBRATION_FILE).write_bytes(self.parent_gate)
        facts = {
            "torch_threads": torch.get_num_threads(),
            "device": self.runtime.name,
            "wall_hours": round(self.wall_seconds / 3600, 4),
            "config": asdict(self.config),
            "corpus": self.manifest,
            "parameters": sum(p.numel() for p in self.model.parameters()),
        }
        if self.parent_gate is not None:
            facts["confidence_gate"] = "copied from the weights continued from (fitted for them, not these)"
        save_recipe(directory, self.step, self.cpu_seconds, facts, self.continued_from)

    def train(
        self,
        max_steps: int,
        max_minutes: float | None,
        max_cpu_hours: float | None = None,
        cooldown_hours: float | None = None,
        cooldown_minutes: float | None = None,
    ) -> None:
        """Trains until a bound is reached: optimizer steps, wall minutes of this run, or CPU
        hours in all (the budget that makes two objectives comparable on a CPU). With
        `cooldown_hours` the learning rate falls over the last that many CPU hours of
        `max_cpu_hours`; with `cooldown_minutes`, over the last minutes of `max_minutes` (a GPU's budget)."""
        self.cooldown_on_wall = bool(cooldown_minutes)
        if cooldown_hours:
            if not max_cpu_hours:
                raise TrainingSetupError("a cooldown needs --max-cpu-hours: it ends where the budget does")
            self.cooldown = Cooldown(max_cpu_hours * 3600, cooldown_hours * 3600)
        if cooldown_minutes:
            if not max_minutes:
                raise TrainingSetupError("--cooldown-minutes needs --max-minutes: it ends where the budget does")
            self.cooldown = Cooldown(max_minutes * 60, cooldown_minutes * 60)
        self._started_at = time.time()
        self.model.train()
        deadline = time.time() + max_minutes * 60 if max_minutes else None
        cpu_budget = max_cpu_hours * 3600 if max_cpu_hours else float("inf")
        steps_bound = max_steps if max_steps < progress.UNBOUNDED_STEPS else None
        bounds = progress.Bounds(steps_bound, deadline, cpu_budget if max_cpu_hours else None)
        report = progress.StepReport(self.runtime.say, bounds, self.cpu_seconds)
        self.saved_at = time.monotonic()
        try:
            with (self.run_dir / "log.jsonl").open("a") as log_file:
                while (
                    self.step < max_steps
                    and (deadline is None or time.time() < deadline)
                    and self.cpu_seconds < cpu_budget
                ):
                    self._step(log_file, report)
        except KeyboardInterrupt:
            # The step under way is dropped: the checkpoint holds the last one done.
            self._save_checkpoint()
            raise Interrupted(self.step, self.checkpoint_path) from None
        self._save_checkpoint()
        self.export()

    def _step(self, log_file, report: progress.StepReport) -> None:
        """One optimizer step, then what is due after it: its log line, progress, checkpoint, probes, export."""
        started, wall_started = time.process_time(), time.time()
        for group in self.optimizer.param_groups:
            group["lr"] = self._learning_rate()
        bf16 = self.config.precision == "bf16"
        with torch.autocast(self.runtime.device.type, dtype=torch.bfloat16, enabled=bf16):
            loss, parts = self._loss()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        self.optimizer.step()
        self.step += 1
        self.cpu_seconds += time.process_time() - started
        self.wall_seconds += time.time() - wall_started
        report.step(self.step, loss.item, self.batch_tokens, self.cpu_seconds)
        if self.step % self.config.log_every == 0:
            entry = {
                "step": self.step,
                "loss": round(loss.item(), 4),
                **{k: round(v, 4) for k, v in parts.items()},
                "lr": self._learning_rate(),
                "cpu_hours": round(self.cpu_seconds / 3600, 4),
                "time": time.time(),
            }
            log_file.write(json.dumps(entry) + "\n")
            log_file.flush()
        if self.step % self.config.checkpoint_every == 0 or time.monotonic() - self.saved_at > CHECKPOINT_EVERY_S:
            self._save_checkpoint()
        if self.config.probes and self.step % self.config.probe_every == 0:
            self._probe()
        if self.step % self.config.export_every == 0:
            self.export()

    def _probe(self) -> None:
        probed = self.run_probes()
        with (self.run_dir / "probes.jsonl").open("a") as probes:
            probes.write(json.dumps(probed) + "\n")
        log.info(
            "probes at %d: %d/%d exact; %s",
            self.step,
            probed["exact"],
            len(self.probes),
            [(c["expected"], c["got"]) for c in probed["cases"][:4]],
        )


class FimTrainer(Trainer):
    """The autoregressive fill-in-the-middle baseline: the embedded model's tokenizer plus
    three FIM tokens, a Llama of the same size, the same corpus and batch sampling."""

    def _make_tokenizer(self, documents: list[corpus.Document], init_from: Path | None):
        source = init_from or (self.run_dir if (self.run_dir / "tokenizer.json").exists() else EMBEDDED_MODEL)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(source)
        tokenizer.add_special_tokens({"additional_special_tokens": list(FIM_TOKENS)})
        tokenizer.save_pretrained(self.run_dir)
        return tokenizer

    def _make_batches(self, streams: objective.Streams, rng: np.random.Generator):
        return fim.FimBatchMaker(
            streams,
            self.ids,
            self.config.objective,
            rng,
            tokenizer=self.tokenizer,
            fim_ids=FimIds.from_tokenizer(self.tokenizer),
        )

    def _make_model(self, init_from: Path | None) -> torch.nn.Module:
        if init_from is not None:
            return AutoModelForCausalLM.from_pretrained(init_from, dtype=torch.float32, use_kernels=False)
        return fim.fim_model(self.config.architecture, len(self.tokenizer), FimIds.from_tokenizer(self.tokenizer))

    def _loss(self) -> tuple[torch.Tensor, dict[str, float]]:
        return fim.loss(self.model, self._next_batch())

    def _fim_model(self) -> FimModel:
        c = self.config
        spec = FimSpec(c.max_prefix, c.objective.suffix_head, c.objective.gap_slots, c.objective.context_tokens)
        return FimModel(self.model, self.tokenizer, spec, FimIds.from_tokenizer(self.tokenizer), "training")

    def _probe_engine(self):
        return AutoregressiveEngine(self._fim_model(), EngineSettings(mode="single-line"))

    def _save_spec(self, directory: Path) -> None:
        self._fim_model().spec.save(directory)
