"""enpu_planstore: the eNPU plan store from Python, over libenpu_planstore (ctypes).

    import enpu_planstore
    with enpu_planstore.open("results/demo/plans.h5") as store:
        store.policies()                       # ["dvfs-c-walk", "enpu-all", ...]
        store.buckets()                        # [{"phase": "prefill", "batch": 1, "seq": 1024, "status": "ok"}, ...]
        plan = store.lookup(phase="decode", batch=8, seq=2048, slack=0.05, policy="enpu-all")
        plan["energy_nj"], plan["ops"][0]["lead_vfset"]

A lookup answers what `enpu query --json --vfset` answers (the same library does the
work; the field names are the same). Errors of the library raise PlanStoreError with its
code (enpu_err.h) and message. The library is found by, in order: the ENPU_PLANSTORE_LIB
environment variable (a path to libenpu_planstore.so; nothing else is tried then), the
path the install wrote into _install.py (`cmake --install` writes its prefix's library
there; a wheel built from a source tree with a ./build writes that build's), a build tree
beside this package (../build/src/store/, the source tree's layout), then the system's
loader by soname (a prefix the loader searches, /usr/local after ldconfig)."""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import numbers
import operator
import os
from typing import Any, Dict, List, NoReturn, Optional, Sequence, Union

__version__ = "0.3.0"  # the CMake project's version; the library must be 0.3 or later
SONAME = "libenpu_planstore.so.0.3"

__all__ = ["open", "PlanStore", "PlanStoreError", "vfset_word", "slack_fraction", "default_policy", "ERRORS",
           "__version__"]

Number = Union[int, float]
Plan = Dict[str, Any]

# The library's error codes (enpu_err.h; stable, never renumbered).
ERRORS = {0: "OK", -1: "INVALID", -2: "NOMEM", -3: "IO", -4: "PARSE", -5: "RANGE", -6: "NOT_FOUND",
          -7: "FORMAT", -8: "INFEASIBLE", -9: "INTERNAL", -10: "ENV", -11: "STOPPED"}
PHASES = ("prefill", "decode")            # PLANSTORE_PREFILL, PLANSTORE_DECODE
STATUSES = ("ok", "infeasible_capacity", "failed", "pending")  # PLANSTORE_BUCKET_*
NSTATE = 5                                # SA, VU, SRAM, HBM, ICI
ERR_MSG_LEN = 1024


class PlanStoreError(Exception):
    """An error of libenpu_planstore: .code (negative, enpu_err.h), .name ("NOT_FOUND"),
    .message (the library's text)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (ENPU_ERR_{ERRORS.get(code, code)})")
        self.code, self.name, self.message = code, ERRORS.get(code, str(code)), message


class _Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * ERR_MSG_LEN)]


class _Plan(ctypes.Structure):
    _fields_ = [("policy", ctypes.c_uint32), ("bucket", ctypes.c_uint32), ("phase", ctypes.c_int),
                ("budget_mode", ctypes.c_int), ("batch", ctypes.c_int32), ("seq", ctypes.c_int32),
                ("t_nodvfs_ns", ctypes.c_double), ("t_peak_ns", ctypes.c_double), ("e_nodvfs_nj", ctypes.c_double),
                ("target_ns", ctypes.c_double), ("walk_prefix", ctypes.c_uint64), ("walk_steps", ctypes.c_uint64),
                ("time_ns", ctypes.c_double), ("energy_nj", ctypes.c_double), ("lower_bound_nj", ctypes.c_double),
                ("savings_vs_nodvfs", ctypes.c_double), ("plan_time_ns", ctypes.c_double),
                ("overhead_pct", ctypes.c_double), ("paper_overhead_pct", ctypes.c_double),
                ("plan_energy_nj", ctypes.c_double), ("note", ctypes.c_char_p)]


class _OpStates(ctypes.Structure):
    _fields_ = [("op", ctypes.c_uint32), ("signature", ctypes.c_uint64), ("name", ctypes.c_char_p),
                ("instances", ctypes.c_uint64), ("lead_instances", ctypes.c_uint64),
                ("lead_pareto", ctypes.c_uint32), ("trail_pareto", ctypes.c_uint32),
                ("lead_states", ctypes.c_uint8 * NSTATE), ("trail_states", ctypes.c_uint8 * NSTATE),
                ("lead_time_ns", ctypes.c_double), ("trail_time_ns", ctypes.c_double),
                ("lead_energy_nj", ctypes.c_double), ("trail_energy_nj", ctypes.c_double)]


class _Bucket(ctypes.Structure):
    _fields_ = [("phase", ctypes.c_int), ("batch", ctypes.c_int32), ("seq", ctypes.c_int32),
                ("status", ctypes.c_int)]


def _installed_library() -> Optional[str]:
    """The library path an install wrote beside this file (_install.py), if any."""
    try:
        from . import _install  # type: ignore[attr-defined]
    except ImportError:
        return None
    return getattr(_install, "LIBRARY", None)


def _candidates() -> List[str]:
    env = os.environ.get("ENPU_PLANSTORE_LIB")
    if env:
        return [env]  # asked for explicitly: no fallback that would hide a wrong path
    here = os.path.dirname(os.path.abspath(__file__))
    installed = _installed_library()
    out = [installed] if installed else []
    out.append(os.path.join(here, "..", "..", "build", "src", "store", "libenpu_planstore.so"))
    found = ctypes.util.find_library("enpu_planstore")
    return out + [found or SONAME]


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append(f"{path}: {e}")
    else:
        raise OSError("libenpu_planstore not found; install it (cmake --install BUILD --component planstore) "
                      "and reinstall this package from PREFIX/share/enpu_planstore/python, or set "
                      "ENPU_PLANSTORE_LIB to its path (tried: "
                      + "; ".join(tried) + ")")
    P, E, c_char_p, c_int, c_size_t = ctypes.POINTER, P_ERR, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t
    sigs = {
        "planstore_open": (c_int, [c_char_p, P(ctypes.c_void_p), E]),
        "planstore_open_policy": (c_int, [c_char_p, c_char_p, P(ctypes.c_void_p), E]),
        "planstore_close": (None, [ctypes.c_void_p]),
        "planstore_policy_count": (c_size_t, [ctypes.c_void_p]),
        "planstore_policy_name": (c_char_p, [ctypes.c_void_p, c_size_t]),
        "planstore_lookup": (c_int, [ctypes.c_void_p, c_char_p, c_int, c_int, c_int, ctypes.c_double, P(_Plan), E]),
        "planstore_lookup_slack": (c_int, [ctypes.c_void_p, c_char_p, c_int, c_int, c_int, ctypes.c_double,
                                           P(_Plan), E]),
        "planstore_plan_op_count": (c_size_t, [ctypes.c_void_p, P(_Plan)]),
        "planstore_plan_states": (c_int, [ctypes.c_void_p, P(_Plan), P(_OpStates), c_size_t, P(c_size_t), E]),
        "planstore_bucket_count": (c_size_t, [ctypes.c_void_p, c_char_p]),
        "planstore_bucket_info": (c_int, [ctypes.c_void_p, c_char_p, c_size_t, P(_Bucket), E]),
        "planstore_parse_arg": (c_int, [c_int, c_char_p, P(ctypes.c_double), E]),
        "planstore_default_policy_index": (ctypes.c_long, [P(c_char_p), c_size_t]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


P_ERR = ctypes.POINTER(_Err)
_lib = None


def _library() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


def _raise(err: _Err) -> NoReturn:
    raise PlanStoreError(err.code, err.msg.decode("utf-8", "replace"))


def vfset_word(states: Sequence[int]) -> int:
    """The vf.set word (paper §3.2, register variant) setting the six clocked units to one
    op's states (SA, VU, SRAM, HBM, ICI): FE runs at max(SA, VU, SRAM); unit u's state in
    bits 8u..8u+7 in the order FE, SA, VU, SRAM, HBM, ICI, and the mask of the units set
    (all six) in bits 48..53 — the word `enpu query --vfset` prints."""
    units = [max(states[0], states[1], states[2])] + list(states)
    word = 0x3F << 48
    for u, s in enumerate(units):
        if not 0 <= s <= 255:
            raise PlanStoreError(-5, f"vf.set state {s} of unit {u} outside 0..255")
        word |= s << (8 * u)
    return word


def _nan_none(x: float) -> Optional[float]:
    return None if math.isnan(x) else x


# planstore.h's PLANSTORE_ARG_*: the library checks every number of a lookup from its
# text, by the rules `enpu query` applies to its command line (one set, in C).
_ARG_BATCH, _ARG_SEQ, _ARG_SLACK, _ARG_TARGET_MS = range(4)


def _cstr(name: str, value: Optional[str], optional: bool = False) -> Optional[bytes]:
    """value as the C string the library takes: a str without NUL (C would end it there
    and answer for a shorter name), else TypeError."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if "\0" in value:
        raise PlanStoreError(-1, f"{name}: {value!r} holds a NUL byte")
    return os.fsencode(value)


def _arg_text(name: str, value: Any, strings: bool) -> str:
    """The text of a number as the command line would carry it: an int in decimal (any
    size: the library refuses what is out of range, nothing wraps), a float by repr (its
    exact value), a str (strings=True: a slack's percent form, "5%") as given."""
    whole = name in ("batch", "seq")
    if isinstance(value, str) and strings:
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(operator.index(value))
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and not whole:
        return repr(float(value))
    want = "an int" if whole else "a number or a str (\"5%\")" if strings else "a number"
    raise TypeError(f"{name} must be {want}, got {type(value).__name__}")


def _parse_arg(lib: ctypes.CDLL, which: int, name: str, value: Any, strings: bool = False) -> float:
    """One lookup argument checked and converted by the library (planstore_parse_arg)."""
    text, err, out = _arg_text(name, value, strings), _Err(), ctypes.c_double()
    if lib.planstore_parse_arg(which, _cstr(name, text), ctypes.byref(out), ctypes.byref(err)) < 0:
        raise PlanStoreError(err.code, f"{name}: {err.msg.decode('utf-8', 'replace')}")
    return out.value


class PlanStore:
    """An open plan store (read-only; lookups work on memory). Close it, or use `with`."""

    def __init__(self, path: Union[str, bytes, "os.PathLike[str]"], policy: Optional[str] = None) -> None:
        lib, err, h = _library(), _Err(), ctypes.c_void_p()
        self._h = None
        self.path = os.fspath(path)
        if isinstance(self.path, bytes):
            self.path = os.fsdecode(self.path)
        bpath, pol = _cstr("path", self.path), _cstr("policy", policy, optional=True)
        rc = (lib.planstore_open(bpath, ctypes.byref(h), ctypes.byref(err)) if policy is None else
              lib.planstore_open_policy(bpath, pol, ctypes.byref(h), ctypes.byref(err)))
        if rc < 0:
            _raise(err)
        self._lib, self._h = lib, h

    def close(self) -> None:
        if getattr(self, "_h", None):
            self._lib.planstore_close(self._h)
            self._h = None

    def __enter__(self) -> "PlanStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _handle(self) -> ctypes.c_void_p:
        if not self._h:
            raise PlanStoreError(-1, f"plan store {self.path} is closed")
        return self._h

    def policies(self) -> List[str]:
        """The store's policies in name order (default_policy picks lookup's default)."""
        h = self._handle()
        return [self._lib.planstore_policy_name(h, i).decode() for i in range(self._lib.planstore_policy_count(h))]

    def buckets(self, policy: Optional[str] = None) -> List[Dict[str, Any]]:
        """The policy's bucket grid in (phase, batch, seq) order, each with its status."""
        h, err, b = self._handle(), _Err(), _Bucket()
        pol = _cstr("policy", policy, optional=True)
        n = self._lib.planstore_bucket_count(h, pol)
        if n == 0 and policy is not None and policy not in self.policies():
            raise PlanStoreError(-6, f"no policy '{policy}' in the store")
        out = []
        for i in range(n):
            if self._lib.planstore_bucket_info(h, pol, i, ctypes.byref(b), ctypes.byref(err)) < 0:
                _raise(err)
            out.append({"phase": PHASES[b.phase], "batch": b.batch, "seq": b.seq, "status": STATUSES[b.status]})
        return out

    def lookup(self, phase: str, batch: int, seq: int, slack: Union[Number, str, None] = None,
               target_ms: Optional[Number] = None, policy: Optional[str] = None, vfset: bool = True) -> Plan:
        """The plan for a batch of `batch` requests of `seq` tokens (padded to the smallest
        covering bucket), at a slack (a fraction of the bucket's NoDVFS time) or an exact
        target in ms: a dict with the fields of `enpu query --json` (ops with their lead
        and trail states, and with vfset their vf.set words). Without a policy the store's
        eNPU policy answers, as in `enpu query` (`policy_from`: "default"). A target below the
        bucket's fastest plan gives that plan with `warning` set, as `enpu query` does.

        Every argument is checked by the library with `enpu query`'s rules and refused
        where the command refuses it (PlanStoreError, INVALID): batch and seq are ints of
        the store's range (never reduced to a C int), a slack is a fraction up to 1 or a
        str with its unit ("5%", up to "1000%"; a bare 5 would be 500 % and is refused),
        target_ms is > 0 and finite, and no str holds a NUL byte. A wrong type raises
        TypeError. Raises PlanStoreError."""
        if (slack is None) == (target_ms is None):
            raise PlanStoreError(-1, "give exactly one of slack and target_ms")
        if not isinstance(phase, str):
            raise TypeError(f"phase must be a str, got {type(phase).__name__}")
        if phase not in PHASES:
            raise PlanStoreError(-1, f"phase must be one of {PHASES}, got {phase!r}")
        lib = self._lib
        pol = _cstr("policy", policy, optional=True)
        batch, seq = int(_parse_arg(lib, _ARG_BATCH, "batch", batch)), int(_parse_arg(lib, _ARG_SEQ, "seq", seq))
        if slack is not None:
            slack = _parse_arg(lib, _ARG_SLACK, "slack", slack, strings=True)
        else:
            target_ms = _parse_arg(lib, _ARG_TARGET_MS, "target_ms", target_ms)
        policy_from = "--policy" if policy is not None else "default"
        policy = policy if policy is not None else default_policy(self.policies())
        h, err, plan = self._handle(), _Err(), _Plan()
        plan.target_ns = math.nan  # the reader sets it only when it fills the plan
        ph, pol = PHASES.index(phase), _cstr("policy", policy)
        rc = (lib.planstore_lookup_slack(h, pol, ph, batch, seq, slack, ctypes.byref(plan), ctypes.byref(err))
              if slack is not None else
              lib.planstore_lookup(h, pol, ph, batch, seq, target_ms * 1e6, ctypes.byref(plan), ctypes.byref(err)))
        late = rc == -8 and not math.isnan(plan.target_ns)  # below the fastest plan: filled with it
        if rc < 0 and not late:
            _raise(err)
        d = self._plan_dict(plan, phase, batch, seq, slack, vfset)
        d["policy_from"], d["warning"] = policy_from, err.msg.decode("utf-8", "replace") if late else None
        return d

    def _ops(self, plan: _Plan, vfset: bool) -> List[Dict[str, Any]]:
        h, err = self._handle(), _Err()
        n = self._lib.planstore_plan_op_count(h, ctypes.byref(plan))
        states, got = (_OpStates * max(n, 1))(), ctypes.c_size_t()
        if self._lib.planstore_plan_states(h, ctypes.byref(plan), states, n, ctypes.byref(got), ctypes.byref(err)) < 0:
            _raise(err)
        ops = []
        for s in states[:got.value]:
            o = {"op": s.op, "signature": f"0x{s.signature:016x}", "name": s.name.decode(),
                 "instances": s.instances, "lead_instances": s.lead_instances, "lead_pareto": s.lead_pareto,
                 "trail_pareto": s.trail_pareto, "lead_states": list(s.lead_states),
                 "trail_states": list(s.trail_states), "lead_time_ns": s.lead_time_ns,
                 "trail_time_ns": s.trail_time_ns, "lead_energy_nj": s.lead_energy_nj,
                 "trail_energy_nj": s.trail_energy_nj}
            if vfset:
                o["lead_vfset"], o["trail_vfset"] = vfset_word(o["lead_states"]), vfset_word(o["trail_states"])
            ops.append(o)
        return ops

    def _plan_dict(self, plan: _Plan, phase: str, batch: int, seq: int, slack: Optional[float],
                   vfset: bool) -> Plan:
        h = self._handle()
        return {"store": self.path, "policy": self._lib.planstore_policy_name(h, plan.policy).decode(),
                "phase": phase, "budget": "paper" if plan.budget_mode == 1 else "strict",
                "request": {"batch": batch, "seq": seq},
                "bucket": {"batch": plan.batch, "seq": plan.seq, "row": plan.bucket},
                "target_ns": plan.target_ns, "slack": slack, "walk_prefix": plan.walk_prefix,
                "walk_steps": plan.walk_steps, "time_ns": plan.time_ns, "energy_nj": plan.energy_nj,
                "lower_bound_nj": plan.lower_bound_nj, "savings_vs_nodvfs": plan.savings_vs_nodvfs,
                "plan_time_ns": _nan_none(plan.plan_time_ns), "overhead_pct": _nan_none(plan.overhead_pct),
                "paper_overhead_pct": _nan_none(plan.paper_overhead_pct),
                "plan_energy_nj": _nan_none(plan.plan_energy_nj), "t_nodvfs_ns": plan.t_nodvfs_ns,
                "t_peak_ns": plan.t_peak_ns, "e_nodvfs_nj": plan.e_nodvfs_nj,
                "ops": self._ops(plan, vfset), "capacity_note": (plan.note or b"").decode()}


def slack_fraction(slack: Union[Number, str]) -> float:
    """A slack as lookup reads it (a fraction up to 1, or a str with its unit: "5%"), as a
    fraction; PlanStoreError where `enpu query --slack` refuses it (a bare 5 would be
    500 %). For a runtime that reads its slack from a command line or a config file."""
    return _parse_arg(_library(), _ARG_SLACK, "slack", slack, strings=True)


def default_policy(names: Sequence[str]) -> Optional[str]:
    """The policy a lookup without one answers with, in `enpu query` and the C library
    alike (a NULL policy): the library's one rule, planstore_default_policy_index (enpu-all,
    else enpu-c, else the first eNPU policy by name, else the first but the nodvfs and
    uniform references, else the first; a sweep point's policies only by name). None when
    names is empty."""
    names = list(names)
    arr = (ctypes.c_char_p * max(len(names), 1))(*[_cstr("policy", n) for n in names])
    pick = _library().planstore_default_policy_index(arr, len(names))
    return names[pick] if pick >= 0 else None


def open(path: Union[str, bytes, "os.PathLike[str]"], policy: Optional[str] = None) -> PlanStore:  # noqa: A001 (shadows the builtin on purpose: enpu_planstore.open)
    """Open a plan store (every policy, or only `policy` for a faster open)."""
    return PlanStore(path, policy)
