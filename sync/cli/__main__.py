"""``python -m judgelab.sync.cli``: the ``judgelab`` command."""

from judgelab.sync.cli import main

if __name__ == "__main__":
    main(prog_name="judgelab")
