"""A PEP 517 build backend for enpu_planstore that needs nothing but the standard library.

`pip install ./python` in a plain venv on a machine without a package index cannot fetch
setuptools into pip's isolated build environment, and without isolation Debian's
setuptools 66 stops on "invalid command 'bdist_wheel'" when the wheel package is absent.
The package is a few pure-Python files, so this backend writes the wheel itself (a zip
with the dist-info PEP 427 asks for). It also tells the installed package where the
library is, in enpu_planstore/_install.py, when it can know: a copy of the package put
by `cmake --install` already holds that file (the install prefix's library); a source
tree whose ./build/src/store holds a built library gets that path."""
import base64
import hashlib
import os
import re
import zipfile

NAME, DIST = "enpu-planstore", "enpu_planstore"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
PKG = os.path.join(HERE, DIST)


def _version():
    text = open(os.path.join(PKG, "__init__.py"), encoding="utf-8").read()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def _metadata(version):
    readme = open(os.path.join(HERE, "README.md"), encoding="utf-8").read()
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
            "Summary: The eNPU DVFS plan store from Python (ctypes over libenpu_planstore)\n"
            "Requires-Python: >=3.9\nDescription-Content-Type: text/markdown\n\n" + readme)


def _install_note():
    """enpu_planstore/_install.py's text: the copy's own (cmake --install), else the
    library of the source tree's build, else None (the package then searches at import)."""
    own = os.path.join(PKG, "_install.py")
    if os.path.exists(own):
        return None  # packaged with the other files
    lib = os.path.join(os.path.dirname(HERE), "build", "src", "store", "libenpu_planstore.so")
    if not os.path.exists(lib):
        return None
    return ('"""Written by the wheel build: the library of the source tree it was built from."""\n'
            f"LIBRARY = {os.path.realpath(lib)!r}\n")


def _files():
    out = []
    for root, dirs, names in os.walk(PKG):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if not n.endswith((".pyc", ".pyo")):
                path = os.path.join(root, n)
                out.append((os.path.relpath(path, HERE).replace(os.sep, "/"), open(path, "rb").read()))
    note = _install_note()
    if note:
        out.append((f"{DIST}/_install.py", note.encode()))
    return out


def _wheel(directory, files):
    version = _version()
    info = f"{DIST}-{version}.dist-info"
    files = files + [(f"{info}/METADATA", _metadata(version).encode()),
                     (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: enpu_wheel\nRoot-Is-Purelib: true\n"
                                       b"Tag: py3-none-any\n"),
                     (f"{info}/top_level.txt", f"{DIST}\n".encode())]
    record = []
    name = f"{DIST}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        z.writestr(zipfile.ZipInfo(f"{info}/RECORD", (1980, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, _files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """`pip install -e ./python`: a .pth naming this directory, so edits take effect."""
    return _wheel(wheel_directory, [(f"__editable__.{DIST}.pth", (HERE + "\n").encode())])
