"""Burn-in health check: repeated matrix multiplies on the device, each result checked.

Like gpu-burn: the device multiplies the same two float32 matrices again and
again. The first product is checked against a float64 product computed on the
CPU, and every later product against the first. An element that differs by
more than the rounding error float32 can make over that dot product counts as
a mismatch; any mismatch fails the run (exit code 1). Reports GFLOP/s.
Under torchrun each rank checks its own device and rank 0 reports for all.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.distributed as dist

from training.workloads import WORKLOADS, event_lines
from training.workloads.arguments import check_ranges
from training.workloads.distributed import DistEnv, start_process
from training.workloads.reporter import env_event
from training.workloads.stops import guarded, install_signal_handlers

NAME = "burnin"
CPU_SIZE = 256
GPU_SIZE = 4096
REFERENCE_ROWS = 64  # rows checked in float64 on large matrices, to keep the CPU reference cheap
EXIT_MISMATCH = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m training.workloads.burnin", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, help=f"matrix size; 0 = {GPU_SIZE} on a GPU, {CPU_SIZE} on CPU")
    parser.add_argument("--iterations", type=int, help="multiplies per device")
    parser.add_argument("--seconds", type=float, help="run for this long instead of --iterations")
    parser.add_argument("--seed", type=int, help="seed of the matrices")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads; 0 = cores / local processes")
    parser.add_argument("--report-interval", type=float, default=0.25, help="seconds between progress events")
    parser.add_argument("--tiny", action="store_true", help="small, fast configuration (tests and smoke checks)")
    parser.add_argument(
        "--inject-fault",
        type=int,
        metavar="ITERATION",
        help="flip one bit of this iteration's product before it is checked (tests the checker)",
    )
    parser.set_defaults(**WORKLOADS[NAME].defaults)
    return parser


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.tiny:
        args.size = args.size or 128
        args.iterations = min(args.iterations, 10)
    check_ranges(parser, args, ("size", "iterations", "seed"))
    if args.seconds is not None and args.seconds <= 0:
        parser.error("--seconds must be positive")
    return args


class Checker:
    """Holds the operands, the first product and the per-element error bound."""

    def __init__(self, size: int, seed: int, device: torch.device) -> None:
        generator = torch.Generator().manual_seed(seed)
        a = torch.randn(size, size, generator=generator)
        b = torch.randn(size, size, generator=generator)
        self.a, self.b = a.to(device), b.to(device)
        # Rounding in a float32 dot product of length n stays within about
        # n * eps * sum(|a_ik * b_kj|); twice that leaves room for any summation order.
        eps = torch.finfo(torch.float32).eps
        self.bound = 2 * size * eps * (self.a.abs() @ self.b.abs()) + torch.finfo(torch.float32).tiny
        self.rows = torch.randperm(size, generator=generator)[:REFERENCE_ROWS] if size > 4 * REFERENCE_ROWS else None
        self.first: torch.Tensor | None = None
        self.worst = 0.0  # largest |error| / bound seen

    def multiply(self) -> torch.Tensor:
        return self.a @ self.b

    def mismatches(self, product: torch.Tensor) -> int:
        """Elements of ``product`` out of bounds: against float64 for the first, against the first after."""
        if self.first is None:
            self.first = product.clone()
            return self._against_float64(product)
        return self._count(product.double() - self.first.double(), self.bound)

    def _against_float64(self, product: torch.Tensor) -> int:
        a, b = self.a.cpu().double(), self.b.cpu().double()
        rows = self.rows if self.rows is not None else slice(None)
        reference = a[rows] @ b
        return self._count(product.cpu()[rows].double() - reference, self.bound.cpu()[rows])

    def _count(self, error: torch.Tensor, bound: torch.Tensor) -> int:
        ratio = error.abs() / bound.double().to(error.device)
        ratio = torch.nan_to_num(ratio, nan=float("inf"))
        self.worst = max(self.worst, ratio.max().item())
        return int((ratio > 1).sum().item())


def flip_bit(product: torch.Tensor, seed: int) -> None:
    """Flip the highest exponent bit of one element: the kind of fault a bad device makes."""
    index = torch.randint(product.numel(), (1,), generator=torch.Generator().manual_seed(seed)).item()
    product.view(-1).view(torch.int32)[index] ^= 1 << 30


def main(argv: list[str] | None = None) -> int:
    return guarded(_main, argv)


def _main(argv: list[str] | None) -> int:
    install_signal_handlers()
    args = parse_args(argv)
    env = DistEnv.from_environ()
    device = start_process(env, args.threads)
    # TF32 would round products to ~10 mantissa bits and fail the float32 bound.
    torch.set_float32_matmul_precision("highest")
    size = args.size or (GPU_SIZE if device.type == "cuda" else CPU_SIZE)
    if env.is_main:
        env_event("ddp" if env.distributed else "single", env.world_size, device, workload=NAME, size=size)

    result = burn(args, size, device, report=env.is_main)
    results = [result]
    if env.distributed:
        results = [None] * env.world_size
        dist.all_gather_object(results, result)
    failed = [r for r in results if r["mismatches"]]
    if env.is_main:
        _report_done(results, failed)
    if env.distributed:
        dist.destroy_process_group()
    return EXIT_MISMATCH if failed else 0


def burn(args: argparse.Namespace, size: int, device: torch.device, report: bool) -> dict:
    """Multiply and check until done; the device's figures."""
    checker = Checker(size, args.seed, device)
    throttle = event_lines.ProgressThrottle(args.report_interval)
    flops = 2.0 * size**3
    compute_seconds, mismatches, iteration = 0.0, 0, 0
    started = time.monotonic()
    while _more(args, iteration, started):
        begin = time.perf_counter()
        product = checker.multiply()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        compute_seconds += time.perf_counter() - begin
        if iteration == args.inject_fault:
            flip_bit(product, args.seed + iteration)
        mismatches += checker.mismatches(product)
        iteration += 1
        if report and iteration == 1:
            event_lines.emit("first_step", ts=time.time())
        if report and throttle.ready(force=not _more(args, iteration, started)):
            event_lines.emit(
                "progress",
                step=iteration,
                epoch=0,
                loss=None,
                accuracy=None,
                samples_per_s=iteration / compute_seconds,
                gflops=flops * iteration / compute_seconds / 1e9,
                mismatches=mismatches,
                ts=time.time(),
            )
    return {
        "device": str(device),
        "iterations": iteration,
        "gflops": flops * iteration / compute_seconds / 1e9,
        "mismatches": mismatches,
        "worst_error_ratio": checker.worst,
        "matmuls_per_s": iteration / compute_seconds,
    }


def _more(args: argparse.Namespace, iteration: int, started: float) -> bool:
    if args.seconds is not None:
        return time.monotonic() - started < args.seconds
    return iteration < args.iterations


def _report_done(results: list[dict], failed: list[dict]) -> None:
    for rank, result in enumerate(results):
        verdict = f"FAILED, {result['mismatches']} mismatched elements" if result["mismatches"] else "ok"
        print(
            f"rank {rank} {result['device']}: {result['gflops']:.1f} GFLOP/s over {result['iterations']} multiplies, "
            f"worst error {result['worst_error_ratio']:.3g} of the allowed bound: {verdict}",
            file=sys.stderr if result["mismatches"] else sys.stdout,
            flush=True,
        )
    event_lines.emit(
        "done",
        accuracy=None,
        loss=None,
        samples_per_s=sum(r["matmuls_per_s"] for r in results),
        gflops=sum(r["gflops"] for r in results),
        mismatches=sum(r["mismatches"] for r in results),
        ok=not failed,
        devices=results,
    )


if __name__ == "__main__":
    sys.exit(main())
