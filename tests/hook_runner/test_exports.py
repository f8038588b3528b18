"""STYLE.md §2.1: each package's __init__ re-exports a sorted __all__ whose names exist."""

import harness_hook_runner
import harness_hooks_claude_code


def test_all_is_sorted_and_every_name_exists():
    for module in (harness_hook_runner, harness_hooks_claude_code):
        assert module.__all__ == sorted(module.__all__), module.__name__
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)
