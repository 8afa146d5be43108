"""Adds the data-only package `aqbench_datasets` (the datasets/ folder) to the build.

pyproject.toml finds packages by folder name, and the folder is deliberately not called
`datasets` inside the wheel (that would shadow Hugging Face `datasets`, which AIPerf imports).
"""

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def finalize_options(self) -> None:
        super().finalize_options()
        if "aqbench_datasets" not in self.packages:
            self.packages.append("aqbench_datasets")


setup(cmdclass={"build_py": BuildPy})
