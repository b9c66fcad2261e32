"""`litebert study list`, `run` and `report`.
Each command imports what it runs inside it: a command line builds only its own group's
parser (litebert.cli), and `--help` loads no torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from litebert.cpus import usable_cpus


def cmd_study_list(args: argparse.Namespace) -> None:
    from litebert.studies.measured import MEASURED
    from litebert.studies.spec import SPEC_DIR, builtin_names, load_spec

    for name in builtin_names():
        spec = load_spec(name)
        print(f"{name:<22} {spec.paper:<10} {len(spec.runs):>2} runs  {spec.title}")
    for name, study in MEASURED.items():
        print(f"{name:<22} {study.paper:<10} {study.parts:>2} parts {study.title}")
    print(f"\nfiles: {SPEC_DIR}; run one with `litebert study run NAME --out DIR`")


def cmd_study_run(args: argparse.Namespace) -> None:
    from litebert.studies.measured import MEASURED
    from litebert.studies.runner import run_study
    from litebert.studies.spec import StudyError, load_spec

    if args.study in MEASURED:
        if args.steps is not None:
            raise StudyError(f"--steps: {args.study} measures, it trains no run; drop --steps")
        study = MEASURED[args.study]
        study.run(Path(args.out), quick=args.quick, only=args.only)
        for path in study.report(Path(args.out)):
            print(f"wrote {path}")
        return
    run_study(load_spec(args.study), Path(args.out), quick=args.quick, only=args.only,
              steps=args.steps, workers=args.workers)
    _study_report(Path(args.out), missing_ok=True)


def cmd_study_report(args: argparse.Namespace) -> None:
    _study_report(Path(args.dir), missing_ok=False)


def _study_report(study_dir: Path, missing_ok: bool) -> None:
    from litebert.studies.measured import measured_study_in

    measured = measured_study_in(study_dir)
    if measured is not None:
        for path in measured.report(study_dir):
            print(f"wrote {path}")
        return
    try:
        from litebert.studies.report import write_report
    except ImportError:  # the report writer is optional for running a study
        if missing_ok:
            return
        raise
    for path in write_report(study_dir):
        print(f"wrote {path}")


def add_study_commands(sub) -> None:
    study = sub.add_parser("study", help="the papers' experiments: runs, evaluations, report")
    ssub = study.add_subparsers(dest="study_command", required=True)
    p = ssub.add_parser("list", help="the built-in studies")
    p.set_defaults(func=cmd_study_list)
    p = ssub.add_parser("run", help="pre-train and evaluate every run of a study (resumable)")
    p.add_argument("study", metavar="NAME|FILE.yaml",
                   help="a built-in study (`litebert study list`) or a study YAML file")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the study directory; an existing one is continued (required)")
    p.add_argument("--quick", action="store_true",
                   help="the study's quick settings: minutes on 2 CPU cores (default: off)")
    p.add_argument("--steps", type=int, metavar="N",
                   help="pre-training steps of every run (default: the study's budget)")
    p.add_argument("--only", nargs="+", metavar="RUN",
                   help="run only these runs (a measured study: these rows), e.g. to "
                        "spread a study over machines (default: all)")
    p.add_argument("--workers", type=int, default=usable_cpus(), metavar="N",
                   help="tokenizer processes of the data builds (default: the CPUs this "
                        "process may use, %(default)s here)")
    p.set_defaults(func=cmd_study_run)
    p = ssub.add_parser("report", help="report.md, results.json and plots of a study directory")
    p.add_argument("dir", help="a study directory (from `litebert study run`)")
    p.set_defaults(func=cmd_study_report)
