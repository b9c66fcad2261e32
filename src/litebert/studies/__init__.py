"""The paper's experiments as runnable studies (in progress: the measurements come first).

- `similarity.py`: Figure 2, the L2 distance and the angle between each layer's input and
  output embeddings
"""
