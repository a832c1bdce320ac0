"""Suite-wide settings: one thread for torch and BLAS.

The models in these tests are small; on a 2-core machine shared with other
work, waking a second thread costs more than it saves, many times over.
"""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(threads)
