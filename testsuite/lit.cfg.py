# lit configuration for aicc's golden tests: every .aig/.test/.aip file under testsuite/ with
# RUN: lines is a test; %aicc is the driver of the build under test (--param build=DIR).
# Feature `ocr-model`: the PP-OCRv4 model is in .cache/models (tools/fetch-models.sh, which
# tools/run-tests.sh runs first); tests that say REQUIRES: ocr-model are UNSUPPORTED without it.
import os
import shutil
import lit.formats

config.name = 'aicc'
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = ['.aig', '.test', '.aip', '.onnxtest']
config.test_source_root = os.path.dirname(__file__)
root = os.path.dirname(config.test_source_root)
build = lit_config.params.get('build', 'build')
if not os.path.isabs(build):
    build = os.path.join(root, build)
config.test_exec_root = os.path.join(build, 'lit')
config.excludes = ['unit', 'fuzz', 'Inputs', 'lit.cfg.py']
config.substitutions.append(('%aicc', os.path.join(build, 'aicc')))
config.substitutions.append(('%root', root))
config.substitutions.append(('%examples', os.path.join(root, 'examples')))
config.substitutions.append(('%python', 'python3'))
ocr_model = os.path.join(root, '.cache', 'models', 'ocr-models-1.4.2', 'package', 'assets',
                         'ch_PP-OCRv4_rec_infer.onnx')   # where tools/fetch-models.sh puts it
if os.path.exists(ocr_model):
    config.available_features.add('ocr-model')
# A sanitizer build (make check's build-san) runs several times slower: long suites that support it
# run a representative subset there (testsuite/conformance/targets.sh).
aicc_bin = os.path.join(build, 'aicc')
if os.path.exists(aicc_bin):
    with open(aicc_bin, 'rb') as f:
        if b'__asan_init' in f.read():
            config.environment['AICC_CONFORMANCE_SUBSET'] = '1'
            config.available_features.add('sanitizer')   # docs-numbers.test: the figures do not depend on it
# the detector and the direction classifier beside it (same package): ocr-det-model, ocr-cls-model
for feature, name in (('ocr-det-model', 'ch_PP-OCRv4_det_infer.onnx'),
                      ('ocr-cls-model', 'ch_ppocr_mobile_v2.0_cls_infer.onnx')):
    if os.path.exists(os.path.join(os.path.dirname(ocr_model), name)):
        config.available_features.add(feature)
# Feature `strace`: tests that count the files a compile opens.
if shutil.which('strace'):
    config.available_features.add('strace')
# Feature `mpi`: the build has Open MPI (BUILD/mpi.flag, written by the Makefile) and mpirun is
# on PATH; testsuite/mpi runs ranks with %mpirun (oversubscribed, root allowed).
try:
    with open(os.path.join(build, 'mpi.flag')) as f:
        if f.read().strip() == 'yes' and shutil.which('mpirun'):
            config.available_features.add('mpi')
except OSError:
    pass
config.substitutions.append(('%mpirun', os.path.join(config.test_source_root, 'mpi', 'Inputs', 'mpirun.sh')))
config.substitutions.append(('%same', os.path.join(config.test_source_root, 'mpi', 'Inputs', 'same.sh')))
config.environment['PATH'] = '/usr/lib/llvm-14/bin:' + os.environ.get('PATH', '')
for var in ('ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS', 'HOME', 'OPENBLAS_CORETYPE', 'OPENBLAS_L2_SIZE',
            'OPENBLAS_NUM_THREADS', 'AICC_ISA', 'GLIBC_TUNABLES'):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# Feature `asan`: the build under test is the ASan+UBSan one (build-san), whose shadow memory a
# `ulimit -v` address-space limit cannot hold: tests of memory limits say UNSUPPORTED: asan.
if 'san' in os.path.basename(os.path.normpath(build)):
    config.available_features.add('asan')
