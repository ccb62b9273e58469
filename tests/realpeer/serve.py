"""Start llama.cpp's own server (xllamacpp) for boxmaker's real-peer tests.

Usage: python serve.py --model PATH [--port 0] [--n-ctx 4096] [--slots 2]
                       [--template tests/realpeer/chatml-tools.jinja | --model-template]
                       [--metrics] [--slot-save-path DIR] [--greedy] [--cache-ram MIB] [--threads N]
                       [--cache-reuse N] [--context-shift]

Listens on 127.0.0.1 only. Prints `listening on 127.0.0.1:PORT` as its first stdout line once
the model is loaded and the server answers, like fake-llama-server, and runs until its stdin
reaches end of file (the test that started it exits or closes the pipe) or it gets SIGTERM.
"""

import argparse
import os
import signal
import socket
import sys
import time
import urllib.request

import xllamacpp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--n-ctx", type=int, default=4096, help="context per slot")
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--template", default=os.path.join(here, "chatml-tools.jinja"))
    ap.add_argument(
        "--model-template",
        action="store_true",
        help="the model's own chat template (SmolLM2's has no tool support) instead of --template",
    )
    ap.add_argument(
        "--cache-reuse",
        type=int,
        default=0,
        help="llama-server --cache-reuse N: reuse cached chunks of at least N tokens (bxctl verify's test)",
    )
    ap.add_argument(
        "--context-shift",
        action="store_true",
        help="llama-server --context-shift (bxctl verify's test)",
    )
    ap.add_argument("--metrics", action="store_true", help="serve /metrics (llama-server --metrics)")
    ap.add_argument("--slot-save-path", help="allow POST /slots/N?action=save into DIR")
    ap.add_argument(
        "--threads",
        type=int,
        help="the CPU threads llama.cpp computes with (default: up to 4, at most the CPUs)",
    )
    ap.add_argument(
        "--cache-ram",
        type=int,
        help="llama-server's --cache-ram MiB: the prompt cache in host memory shared by the "
        "slots (0 turns it off, so a slot reuses only what it computed itself)",
    )
    ap.add_argument(
        "--greedy",
        action="store_true",
        help="sample the likeliest token (temperature 0): the same prompt, the same answer",
    )
    args = ap.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port or free_port()
    params.n_parallel = args.slots
    # llama.cpp splits n_ctx across the slots; ask for n_ctx per slot, as the fake reports it.
    params.n_ctx = args.n_ctx * args.slots
    params.use_jinja = True
    if not args.model_template:
        with open(args.template, encoding="utf-8") as f:
            params.chat_template = f.read()
    params.cpuparams.n_threads = args.threads or max(1, min(4, os.cpu_count() or 1))
    params.warmup = False
    # What witnessing relies on (docs/threat-model.md): an answer depends on the witnessed
    # prompt alone, so no chunk reuse (`--cache-reuse`) and no context shift. Both are
    # llama.cpp's defaults; set here so that a change of default does not go unnoticed. The
    # options turn them on for the test that shows /props does not report them.
    params.n_cache_reuse = args.cache_reuse
    params.ctx_shift = args.context_shift
    params.endpoint_metrics = args.metrics
    if args.slot_save_path:
        params.slot_save_path = args.slot_save_path
    if args.cache_ram is not None:
        params.cache_ram_mib = args.cache_ram
    if args.greedy:
        # llama-server's default samples at 0.8 with a random seed: now and then the model
        # answers otherwise than a test's script needs.
        params.sampling.temp = 0.0

    server = xllamacpp.Server(params)
    url = f"http://127.0.0.1:{params.port}/health"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            sys.exit(f"serve.py: {url} did not answer 200 within 60 s")
        time.sleep(0.05)
    print(f"listening on 127.0.0.1:{params.port}", flush=True)

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    sys.stdin.read()  # until the parent closes the pipe or exits
    del server
    os._exit(0)


if __name__ == "__main__":
    main()
