"""llama-server's command line over xllamacpp (llama.cpp's server, built for PyPI).

Takes exactly the flags `bxctl dev --model` gives llama-server, with llama-server's names
and meanings (llama.cpp tools/server/README.md), and refuses any other, as llama-server
refuses an unknown flag (exit status 1 and a message on stderr):

  -m/--model FILE  --host ADDR  --port N  -c/--ctx-size N (all slots together)
  -np/--parallel N  --cache-reuse N  --no-context-shift/--context-shift
  --jinja  --chat-template-file FILE  --temp T

Logs to stderr, serves until SIGTERM or SIGINT.
"""

import argparse
import os
import signal
import sys

import xllamacpp


class Refuse(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write(f"error: {message}\n")
        sys.exit(1)


def main():
    ap = Refuse(prog="llama-server", description=__doc__.splitlines()[0], add_help=False)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("-c", "--ctx-size", type=int, default=0)
    ap.add_argument("-np", "--parallel", type=int, default=1)
    ap.add_argument("--cache-reuse", type=int, default=0)
    shift = ap.add_mutually_exclusive_group()
    shift.add_argument("--no-context-shift", dest="context_shift", action="store_false")
    shift.add_argument("--context-shift", dest="context_shift", action="store_true")
    ap.add_argument("--jinja", action="store_true")
    ap.add_argument("--chat-template-file")
    ap.add_argument("--temp", type=float)
    args = ap.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    # llama-server's -c is the whole context, split across the slots.
    params.n_ctx = args.ctx_size
    params.n_cache_reuse = args.cache_reuse
    params.ctx_shift = bool(args.context_shift)
    params.use_jinja = args.jinja
    if args.chat_template_file:
        with open(args.chat_template_file, encoding="utf-8") as f:
            params.chat_template = f.read()
    if args.temp is not None:
        params.sampling.temp = args.temp
    params.cpuparams.n_threads = max(1, min(4, os.cpu_count() or 1))
    params.warmup = False

    print(
        f"llama-server (xllamacpp {xllamacpp.__version__}) on {args.host}:{args.port}: "
        f"{args.model}, {args.parallel} slots, ctx {args.ctx_size}, cache-reuse "
        f"{args.cache_reuse}, context shift {'on' if args.context_shift else 'off'}",
        file=sys.stderr,
        flush=True,
    )
    server = xllamacpp.Server(params)
    stop = lambda *_: os._exit(0)  # noqa: E731
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()
    del server


if __name__ == "__main__":
    main()
