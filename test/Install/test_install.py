#!/usr/bin/python3
"""The installed Kiln, as a user gets it.

  examples  installs the `runtime` and `runtime-dev` components alone into a
            temporary prefix, builds examples/runtime against it once with
            find_package(KilnRuntime) (C program on the shared library, C++
            program on the static one) and once with pkg-config (also from a
            copy of the prefix elsewhere: the files relocate), and runs each on
            a compiled model. Their outputs must equal kiln-run's on the same
            input, bit for bit, and nothing they load may come from LLVM, MLIR
            or the build tree.
  deb       builds the Debian packages with CPack and checks them: the runtime
            package's dependencies name nothing of LLVM/MLIR (nor ONNX,
            protobuf, gRPC), the compiler package depends on libmlir-22, every
            binary of the runtime package extracted alone resolves its
            libraries without them, and -dev holds the headers, the archive,
            the CMake package and the pkg-config file.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORBIDDEN = re.compile(r"llvm|mlir|onnx|protobuf|grpc", re.IGNORECASE)


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit("FAIL: %s exited %d\n%s%s" % (" ".join(cmd), result.returncode,
                                                result.stdout, result.stderr))
    return result.stdout


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def loaded_libraries(binary, env=None):
    """The shared libraries `binary` loads (ldd), as {name: path}."""
    libraries = {}
    for line in run(["ldd", binary], env=env).splitlines():
        parts = line.strip().split()
        if "=>" in parts:
            name, path = parts[0], parts[parts.index("=>") + 1]
            check(path != "not", "%s: %s is not found" % (binary, name))
            libraries[name] = path
    return libraries


def parse_outputs(text):
    """{name: float32 values} from the examples' 'output NAME TYPE [..]: v v' lines."""
    outputs = {}
    for line in text.splitlines():
        match = re.match(r"output (\S+) (\S+) \[[^]]*\]:(.*)$", line)
        if match:
            outputs[match.group(1)] = np.array(match.group(3).split(), dtype=np.float32)
    return outputs


def pattern_input(shape):
    """The examples' input: x[i] = (i % 17) / 17 - 0.5 (float32)."""
    count = int(np.prod(shape))
    values = (np.arange(count) % 17).astype(np.float64) / 17.0 - 0.5
    return values.astype(np.float32).reshape(shape)


def examples(args, work):
    build = os.path.abspath(args.build)
    prefix = os.path.join(work, "prefix")
    for component in ("runtime", "runtime-dev"):
        run(["cmake", "--install", build, "--prefix", prefix, "--component", component])
    installed = sorted(os.path.relpath(os.path.join(d, f), prefix)
                       for d, _, files in os.walk(prefix) for f in files)
    for expected in ("include/kiln/runtime.h", "include/kiln/runtime.hpp",
                     "lib/libkiln-runtime.a", "lib/pkgconfig/kiln-runtime.pc",
                     "lib/cmake/KilnRuntime/KilnRuntimeConfig.cmake", "bin/kiln-run"):
        check(expected in installed, "%s is not installed (got %s)" % (expected, installed))
    check(not any("kiln-compile" in f for f in installed),
          "the runtime components install the compiler")
    for binary in ("bin/kiln-run", "bin/kiln-bench"):
        for name, path in loaded_libraries(os.path.join(prefix, binary)).items():
            check(not FORBIDDEN.search(name), "%s loads %s" % (binary, path))

    # A model, its input and kiln-run's outputs (from the build tree).
    model = os.path.join(work, "tiny_cnn.kiln")
    run([os.path.join(build, "bin", "kiln-compile"), os.path.join(ROOT, "examples",
         "tiny_cnn.onnxtxt"), "--target=cpu", "-o", model])
    np.save(os.path.join(work, "image.npy"), pattern_input((1, 3, 8, 8)))  # examples/tiny_cnn.onnxtxt
    run([os.path.join(build, "bin", "kiln-run"), model, "--device=cpu",
         "--input=image=@" + os.path.join(work, "image.npy"),
         "--output-dir=" + os.path.join(work, "reference")])
    reference = np.load(os.path.join(work, "reference", "probabilities.npy")).ravel()

    def check_program(binary, label):
        libs = loaded_libraries(binary)
        for name, path in libs.items():
            check(not FORBIDDEN.search(name), "%s loads %s" % (label, path))
            check(not path.startswith(build), "%s loads %s from the build tree" % (label, path))
        out = run([binary, model, "cpu"])
        check(("kiln runtime 0." in out), "%s: no version line in\n%s" % (label, out))
        got = parse_outputs(out)
        check("probabilities" in got, "%s printed no output:\n%s" % (label, out))
        check(got["probabilities"].shape == reference.shape and
              np.array_equal(got["probabilities"], reference),
              "%s: %s, kiln-run gave %s" % (label, got["probabilities"], reference))
        print("ok: %s (%s)" % (label, " ".join(sorted(n for n in libs if "kiln" in n)) or
                               "runtime linked statically"))
        return libs

    # find_package(KilnRuntime).
    examples_build = os.path.join(work, "examples-cmake")
    run(["cmake", "-G", "Ninja", "-S", os.path.join(ROOT, "examples", "runtime"),
         "-B", examples_build, "-DCMAKE_PREFIX_PATH=" + prefix,
         "-DCMAKE_C_COMPILER_LAUNCHER=", "-DCMAKE_CXX_COMPILER_LAUNCHER="])
    run(["cmake", "--build", examples_build])
    libs = check_program(os.path.join(examples_build, "run_model"), "C example (find_package)")
    check(libs.get("libkiln-runtime.so.0.1", "").startswith(prefix),
          "the C example does not load the installed libkiln-runtime.so: %s" % libs)
    libs = check_program(os.path.join(examples_build, "run_model_cpp"),
                         "C++ example (find_package, static)")
    check(not any("kiln" in n for n in libs), "the static C++ example loads %s" % libs)

    # pkg-config, from the prefix and from a copy of it elsewhere.
    moved = os.path.join(work, "moved", "usr")
    shutil.copytree(prefix, moved, symlinks=True)
    for root in (prefix, moved):
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(root, "lib", "pkgconfig"))
        flags = run(["pkg-config", "--cflags", "--libs", "kiln-runtime"], env=env).split()
        check(any(f == "-L" + os.path.join(root, "lib") or
                  os.path.realpath(f[2:]) == os.path.realpath(os.path.join(root, "lib"))
                  for f in flags if f.startswith("-L")),
              "pkg-config gives %s for the prefix %s" % (flags, root))
        check(run(["pkg-config", "--modversion", "kiln-runtime"], env=env).strip() ==
              run([os.path.join(build, "bin", "kiln-run"), "--version"]).split()[1],
              "pkg-config's version is not kiln-run's")
        c_binary = os.path.join(work, "run_model_pc_%d" % len(root))
        run(["cc", "-std=c99", "-Wall", "-Werror", os.path.join(ROOT, "examples", "runtime",
             "run_model.c"), "-o", c_binary, "-Wl,-rpath," + os.path.join(root, "lib")] + flags)
        check_program(c_binary, "C example (pkg-config, %s)" %
                      ("moved prefix" if root == moved else "prefix"))
        cpp_binary = c_binary + "_cpp"
        run(["c++", "-std=c++17", "-Wall", "-Werror", os.path.join(ROOT, "examples", "runtime",
             "run_model.cpp"), "-o", cpp_binary, "-Wl,-rpath," + os.path.join(root, "lib")] +
            flags)
        check_program(cpp_binary, "C++ example (pkg-config, %s)" %
                      ("moved prefix" if root == moved else "prefix"))

    # Errors reach the example's user: a missing artifact, a device the
    # artifact has no code object for.
    for extra, expected in ((["/nonexistent.kiln", "cpu"], "i/o error"),
                            ([model, "emu:gfx942"], "unsupported")):
        out = subprocess.run([os.path.join(examples_build, "run_model")] + extra,
                             capture_output=True, text=True)
        check(out.returncode != 0 and expected in out.stderr,
              "the C example on %s: exit %d, %r" % (extra, out.returncode, out.stderr))
    print("ok: errors are reported with their status and a non-zero exit")


def deb(args, work):
    build = os.path.abspath(args.build)
    out = os.path.join(work, "packages")
    run(["cpack", "-G", "DEB", "-B", out, "--config", os.path.join(build, "CPackConfig.cmake")],
        cwd=build)
    packages = {}
    for name in os.listdir(out):
        if name.endswith(".deb"):
            packages[name.split("_")[0]] = os.path.join(out, name)
    check(sorted(packages) == ["kiln-compiler", "kiln-runtime", "kiln-runtime-dev",
                               "kiln-serve", "python3-kiln"],
          "packages: %s" % sorted(packages))

    def field(package, name):
        return run(["dpkg-deb", "-f", packages[package], name]).strip()

    def files(package):
        return [line.split()[-1].lstrip(".") for line in
                run(["dpkg-deb", "-c", packages[package]]).splitlines()]

    depends = field("kiln-runtime", "Depends")
    print("kiln-runtime Depends: %s; Installed-Size: %s KiB" %
          (depends, field("kiln-runtime", "Installed-Size")))
    check(depends and not FORBIDDEN.search(depends),
          "kiln-runtime depends on %r" % depends)
    check("libmlir-22" in field("kiln-compiler", "Depends"),
          "kiln-compiler's dependencies miss libmlir-22: %s" % field("kiln-compiler", "Depends"))
    check("kiln-runtime" in field("kiln-runtime-dev", "Depends"),
          "kiln-runtime-dev does not depend on kiln-runtime")
    runtime_files = files("kiln-runtime")
    for expected in ("/usr/bin/kiln-run", "/usr/bin/kiln-bench"):
        check(expected in runtime_files, "kiln-runtime lacks %s" % expected)
    check(any(re.match(r"/usr/lib/libkiln-runtime\.so\.", f) for f in runtime_files),
          "kiln-runtime lacks the shared library: %s" % runtime_files)
    check(not any("kiln-compile" in f or f.endswith(".h") for f in runtime_files),
          "kiln-runtime holds compiler or development files")
    dev_files = files("kiln-runtime-dev")
    for expected in ("/usr/include/kiln/runtime.h", "/usr/include/kiln/runtime.hpp",
                     "/usr/lib/libkiln-runtime.a", "/usr/lib/pkgconfig/kiln-runtime.pc",
                     "/usr/lib/cmake/KilnRuntime/KilnRuntimeConfig.cmake"):
        check(expected in dev_files, "kiln-runtime-dev lacks %s" % expected)
    check("/usr/bin/kiln-compile" in files("kiln-compiler"), "kiln-compiler lacks kiln-compile")
    check(any(f.endswith("/kiln/__init__.py") for f in files("python3-kiln")),
          "python3-kiln lacks the kiln package")

    # The runtime package alone: every ELF file resolves without LLVM/MLIR.
    root = os.path.join(work, "root")
    run(["dpkg-deb", "-x", packages["kiln-runtime"], root])
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(root, "usr", "lib"))
    for relative in ("usr/bin/kiln-run", "usr/bin/kiln-bench"):
        for name, path in loaded_libraries(os.path.join(root, relative), env).items():
            check(not FORBIDDEN.search(name), "%s loads %s" % (relative, path))
    version = run([os.path.join(root, "usr", "bin", "kiln-run"), "--version"], env=env)
    check(version.startswith("kiln-run 0."), "the packaged kiln-run --version: %r" % version)
    for package in sorted(packages):
        print("ok: %s (%s KiB installed)" % (package, field(package, "Installed-Size")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["examples", "deb"])
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kiln-install-") as work:
        {"examples": examples, "deb": deb}[args.mode](args, work)
    print("PASS")


if __name__ == "__main__":
    main()
