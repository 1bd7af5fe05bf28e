"""Regenerate the lifecycle page: python tools/render_lifecycle.py > docs/lifecycle.md"""

from awa.domain.diagram import render_lifecycle_markdown

if __name__ == "__main__":
    print(render_lifecycle_markdown(), end="")
