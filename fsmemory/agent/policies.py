"""Assembly policies: what each model call is sent.

``assemble(policies, prompts, events)`` runs injections first -- they add system
prompt parts (:class:`WorkingMemoryPolicy`, :class:`EpisodicMemoryPolicy`,
:class:`KnowledgeMemoryPolicy`, :class:`AlertPolicy`) -- then reductions that cut the
history (:class:`ConversationPolicy`, :class:`SlidingWindowPolicy`,
:class:`TokenBudgetPolicy`); reductions never orphan a tool result. The result is an
:class:`Assembly` with converters to each provider's format. A policy of your own
implements :class:`AssemblyPolicy` (its :data:`PolicyKind`) and receives an
:class:`AssemblyContext`; :func:`validate_order` checks a list of policies.
"""

from __future__ import annotations

from fsmemory.agent._policies import (
    AlertPolicy,
    Assembly,
    AssemblyContext,
    AssemblyPolicy,
    ConversationPolicy,
    EpisodicMemoryPolicy,
    KnowledgeMemoryPolicy,
    PolicyKind,
    SlidingWindowPolicy,
    TokenBudgetPolicy,
    WorkingMemoryPolicy,
    assemble,
    validate_order,
)

__all__ = [
    "AlertPolicy",
    "Assembly",
    "AssemblyContext",
    "AssemblyPolicy",
    "ConversationPolicy",
    "EpisodicMemoryPolicy",
    "KnowledgeMemoryPolicy",
    "PolicyKind",
    "SlidingWindowPolicy",
    "TokenBudgetPolicy",
    "WorkingMemoryPolicy",
    "assemble",
    "validate_order",
]
