"""Text in, drafts out: the diffusion infilling engine. Knows nothing of LSP."""

import logging

# transformers imports torchao (engine.quantization) whenever it is installed, and torchao logs a
# warning for each CUDA extension a CPU build of torch cannot load, and torch one for each enum
# torchao registers: lines in every editor's log that say nothing about this program. Set before
# any engine module imports transformers.
logging.getLogger("torchao").setLevel(logging.ERROR)
logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)
