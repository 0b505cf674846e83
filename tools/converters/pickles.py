"""The one pickle guard of the converters: a torch.save'd checkpoint read with an
unpickler that resolves only the globals a family allows.

Unpickling calls whatever the file names, so a checkpoint from elsewhere must not
reach pickle unchecked. torch 1.13's own guard is no help (its weights_only
loader rejects the floats every hyperparameter dict holds, and torch.load
replaces any pickle_module by pickle), so load() calls the loaders torch.load
dispatches to (zip archive or legacy format) with a restricted pickle module.
Storages are resolved by torch's own wrapper, never by the file.

Every family allows PLAIN (tensor rebuilders, torch.Size, Parameter, dtypes,
OrderedDict, set and frozenset); a family adds its own (OpenNMT-py's
argparse.Namespace, fairseq's omegaconf stand-ins) as a mapping
(module, name) -> the object to return. --trust-pickle resolves any other
global normally.
"""

import _compat_pickle
import collections
import pickle
import zipfile

from .errors import ConvertError, one_line

TRUST_HINT = "rerun with --trust-pickle if you trust the file"


def plain_globals():
    """(module, name) -> object: what a checkpoint of tensors, dicts, lists and plain
    values names (torch imported here, only when a .pt is read)."""
    import torch
    table = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("builtins", "set"): set, ("builtins", "frozenset"): frozenset,
        ("torch", "Size"): torch.Size,
        ("torch.nn.parameter", "Parameter"): torch.nn.Parameter,
    }
    for name in ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_parameter",
                 "_rebuild_parameter_with_state"):
        if hasattr(torch._utils, name):
            table[("torch._utils", name)] = getattr(torch._utils, name)
    if hasattr(torch._tensor, "_rebuild_from_type_v2"):
        table[("torch._tensor", "_rebuild_from_type_v2")] = torch._tensor._rebuild_from_type_v2
    for name in dir(torch):
        if isinstance(getattr(torch, name, None), torch.dtype):
            table[("torch", name)] = getattr(torch, name)
    return table


BUILTIN_TYPES = {"dict": dict, "list": list, "tuple": tuple, "set": set, "frozenset": frozenset,
                 "int": int, "float": float, "str": str, "bool": bool, "bytes": bytes,
                 "complex": complex, "object": object}


def builtin_types(*names):
    """(module, name) -> type for the builtin types named: constructing one runs no code
    of the file's choosing."""
    return {("builtins", name): BUILTIN_TYPES[name] for name in names}


def restricted_pickle_module(allowed, classify, trust):
    """A pickle module for torch's loaders whose unpickler resolves only allowed."""

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
            if (module, name) in allowed:
                return allowed[(module, name)]
            if trust:
                return super().find_class(module, name)
            explained = classify("%s %s" % (module, name)) if classify else None
            raise ConvertError(explained or "would load %s.%s, more than tensors and plain "
                               "values; %s" % (module, name, TRUST_HINT))

    class Module:
        UnpicklingError = pickle.UnpicklingError

        @staticmethod
        def load(f, **kwargs):
            return Unpickler(f, **kwargs).load()

    Module.Unpickler = Unpickler
    return Module


def load(path, trust=False, allowed=None, classify=None, what="torch checkpoint"):
    """The object the torch.save'd file at path holds, every global its pickle names
    checked against PLAIN and allowed ((module, name) -> object). classify("module
    name"): a message that explains a refused global (an old format), or None.
    ConvertError, starting with path, for a refusal or a file torch cannot read."""
    try:
        import torch.serialization as ts
    except ImportError:
        raise ConvertError("%s: reading a %s needs torch (python3-torch)" % (path, what))
    table = plain_globals()
    table.update(allowed or {})
    module = restricted_pickle_module(table, classify, trust)
    try:
        with open(path, "rb") as f:
            if zipfile.is_zipfile(f):
                f.seek(0)
                with ts._open_zipfile_reader(f) as archive:
                    if ts._is_torchscript_zip(archive):
                        raise ConvertError("a TorchScript archive, not a %s" % what)
                    return ts._load(archive, "cpu", module, encoding="utf-8")
            f.seek(0)
            return ts._legacy_load(f, "cpu", module, encoding="utf-8")
    except ConvertError as e:
        raise ConvertError(str(e) if str(e).startswith(path) else "%s: %s" % (path, e))
    except OSError as e:
        raise ConvertError("%s: %s" % (path, e.strerror or one_line(e)))
    except Exception as e:  # a corrupt file fails anywhere in torch's loaders
        raise ConvertError("%s: cannot read as a %s: %s: %s"
                           % (path, what, type(e).__name__, one_line(e)[:200]))
