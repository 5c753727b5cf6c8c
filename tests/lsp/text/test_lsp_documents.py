"""The open documents (lsp.text.documents): which others a completion may copy lines from."""

from diffusion_infill.lsp.text.documents import Documents


def test_the_other_open_documents_of_a_language_are_the_lines_a_completion_may_copy():
    documents = Documents()
    here = documents.open("file:///a.py", "python", 1, "x = 1\n")
    documents.open("file:///b.py", "python", 1, "def load(path):\n")
    documents.open("file:///c.md", "markdown", 1, "# notes\n")
    documents.open("file:///d.py", "python", 1, "def save(path):\n")

    assert [d.uri for d in documents.others(here)] == ["file:///b.py", "file:///d.py"]
    assert [d.uri for d in documents.others(here, most=1)] == ["file:///d.py"]
