"""Type stubs of the tessera module (python/, README "From Python")."""
import os
from typing import Callable, List, Optional, Sequence, Tuple, Union

__version__: str

Ids = Sequence[int]
Pieces = Sequence[str]
Sentence = Union[Ids, Pieces, str]
Hypothesis = Union[List[int], List[str], str]

class TranslationResult(Tuple[List[Hypothesis], List[float], List[List[int]]]):
    """The translations of one source sentence."""
    @property
    def hypotheses(self) -> List[Hypothesis]: ...
    @property
    def scores(self) -> List[float]: ...
    @property
    def alignments(self) -> List[List[int]]: ...

class GenerationStepResult(Tuple[int, int, int, Optional[str], float, int]):
    """One token as translate_batch(callback=...) streams it: CTranslate2's fields. A
    true return from the callback ends that sentence (beam search streams its best
    hypothesis once final)."""
    @property
    def batch_id(self) -> int: ...
    @property
    def step(self) -> int: ...
    @property
    def token_id(self) -> int: ...
    @property
    def token(self) -> Optional[str]: ...
    @property
    def log_prob(self) -> float: ...
    @property
    def hypothesis_id(self) -> int: ...

class ScoringResult(Tuple[List[float]]):
    """The teacher-forced scores of one target sentence."""
    @property
    def log_probs(self) -> List[float]: ...

class FloatArray:
    """Read-only float32 vectors (buffer protocol: numpy.asarray reads them without a copy)."""
    @property
    def shape(self) -> Union[Tuple[int, int], Tuple[int]]: ...
    @property
    def ndim(self) -> int: ...
    def __len__(self) -> int: ...
    def __buffer__(self, flags: int) -> memoryview: ...
    def tolist(self) -> Union[List[List[float]], List[float]]: ...

class Model:
    """A loaded model and its workers: the base of Translator and Encoder."""
    def __init__(
        self,
        model: Union[str, bytes, os.PathLike],
        *,
        compute_type: str = "f32",
        workers: int = 1,
        threads: int = 0,
        max_memory: Optional[int] = None,
    ) -> None: ...
    @property
    def compute_type(self) -> str: ...
    @property
    def workers(self) -> int: ...
    @property
    def d_model(self) -> int: ...

class Translator(Model):
    def __init__(
        self,
        model: Union[str, bytes, os.PathLike],
        *,
        compute_type: str = "f32",
        workers: int = 1,
        threads: int = 0,
        max_memory: Optional[int] = None,
        vmap: Union[None, str, bytes, os.PathLike] = None,
        shortlist: Union[None, str, bytes, os.PathLike] = None,
        shortlist_first: Optional[int] = None,
        shortlist_best: Optional[int] = None,
        shortlist_threshold: float = 0.0,
    ) -> None: ...
    def translate_batch(
        self,
        source: Sequence[Sentence],
        target_prefix: Optional[Sequence[Sentence]] = None,
        *,
        max_batch_size: int = 0,
        batch_type: str = "examples",
        beam_size: int = 1,
        max_decoding_length: int = 256,
        num_hypotheses: int = 1,
        length_penalty: float = 0,
        return_scores: bool = False,
        return_alignments: bool = False,
        sampling_topk: int = 1,
        sampling_topp: float = 1.0,
        sampling_temperature: float = 1.0,
        seed: int = 0,
        min_decoding_length: int = 0,
        no_repeat_ngram_size: int = 0,
        repetition_penalty: float = 1.0,
        disable_unk: bool = False,
        end_token: Union[None, int, str] = None,
        source_lang: Optional[str] = None,
        target_lang: Optional[str] = None,
        use_vmap: bool = False,
        callback: Optional[Callable[[GenerationStepResult], Optional[bool]]] = None,
    ) -> List[TranslationResult]: ...
    def score_batch(
        self,
        source: Sequence[Sentence],
        target: Sequence[Sentence],
        *,
        max_batch_size: int = 0,
        batch_type: str = "examples",
        source_lang: Optional[str] = None,
        target_lang: Optional[str] = None,
    ) -> List[ScoringResult]: ...

class Encoder(Model):
    def encode_batch(
        self,
        source: Sequence[Sentence],
        *,
        pooling: str = "none",
        max_batch_size: int = 0,
        batch_type: str = "examples",
        source_lang: Optional[str] = None,
    ) -> List[FloatArray]: ...
